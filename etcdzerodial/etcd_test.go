package etcdzerodial_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// etcdServer is a real etcd, embedded in the test process: one member,
// listening on loopback ports of its own, its data in a temporary
// directory. It can be stopped and started again on the same ports and
// data, as an etcd restarted.
type etcdServer struct {
	t        *testing.T
	dir      string
	client   url.URL
	peer     url.URL
	e        *embed.Etcd
	Endpoint string // host:port, for clientv3.Config.Endpoints
}

// startEtcd starts an etcd for the test; it is stopped when the test ends.
func startEtcd(t *testing.T) *etcdServer {
	t.Helper()
	s := &etcdServer{t: t, dir: t.TempDir(), client: freeURL(t), peer: freeURL(t)}
	s.Endpoint = s.client.Host
	s.start()
	t.Cleanup(s.stop)
	return s
}

func freeURL(t *testing.T) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// start starts the server, on its ports and data, and waits until it
// serves.
func (s *etcdServer) start() {
	s.t.Helper()
	if s.e != nil {
		s.t.Fatal("etcd already started")
	}
	cfg := embed.NewConfig()
	cfg.Name = "zerodial-test"
	cfg.Dir = s.dir
	cfg.ListenClientUrls = []url.URL{s.client}
	cfg.AdvertiseClientUrls = []url.URL{s.client}
	cfg.ListenPeerUrls = []url.URL{s.peer}
	cfg.AdvertisePeerUrls = []url.URL{s.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Fast elections (a single member elects itself within 200 ms), and a
	// minimum lease TTL of 150 ms (etcd grants a whole second).
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.UnsafeNoFsync = true
	var (
		e   *embed.Etcd
		err error
	)
	// The port picked may be taken meanwhile, or, on a restart, not yet
	// free: try a few times.
	for range 20 {
		if e, err = embed.StartEtcd(cfg); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("starting etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		s.t.Fatalf("etcd failed to start: %v", err)
	case <-time.After(20 * time.Second):
		e.Close()
		s.t.Fatal("etcd took more than 20 s to start")
	}
	s.e = e
}

// stop stops the server, if it runs.
func (s *etcdServer) stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

// newClient returns a client of s, closed when the test ends (unless it
// was closed before).
func (s *etcdServer) newClient(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{s.Endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		// Reconnect soon after a restart: gRPC's default backoff between
		// attempts grows to 2 minutes.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// recorder is a resolver's report function that keeps what it is told, and
// checks the resolver's promises: never two reports at once, and none after
// the Watch's Close has returned.
type recorder struct {
	t       *testing.T
	mu      sync.Mutex
	changed chan struct{} // one slot: a report came
	addrs   []string      // the set last reported
	err     error         // the error last reported; nil after a set
	reports int
	busy    atomic.Bool
	closed  atomic.Bool // set by the test once Close has returned
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{t: t, changed: make(chan struct{}, 1)}
}

func (r *recorder) report(addrs []string, err error) {
	if !r.busy.CompareAndSwap(false, true) {
		r.t.Error("report called concurrently")
	}
	defer r.busy.Store(false)
	if r.closed.Load() {
		r.t.Error("report called after the Watch's Close returned")
	}
	r.mu.Lock()
	r.reports++
	r.err = err
	if err == nil {
		r.addrs = addrs
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// state returns the set last reported, the number of reports, and the
// error last reported (nil when the last report was a set).
func (r *recorder) state() (addrs []string, n int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addrs, r.reports, r.err
}

// waitFor waits until the last report is the set want (in any order) or,
// for an empty want, an error; it fails the test after timeout.
func (r *recorder) waitFor(want []string, timeout time.Duration) {
	r.t.Helper()
	want = slices.Sorted(slices.Values(want))
	deadline := time.After(timeout)
	for {
		addrs, _, err := r.state()
		if len(want) == 0 && err != nil || len(want) > 0 && err == nil && slices.Equal(addrs, want) {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.t.Fatalf("after %v the resolver reports %q (error %v), want %s", timeout, addrs, err, describe(want))
		}
	}
}

func describe(want []string) string {
	if len(want) == 0 {
		return "an error (no addresses)"
	}
	return fmt.Sprintf("%q", want)
}

// keys returns the keys under dir, with the leases they are bound to.
func keys(t *testing.T, cli *clientv3.Client, dir string) map[string]clientv3.LeaseID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]clientv3.LeaseID{}
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = clientv3.LeaseID(kv.Lease)
	}
	return m
}
