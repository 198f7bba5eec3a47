package bench

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/peer"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/resolver"
)

// Replicas. BenchmarkReplicas/<row> makes one 16B call at a time, as
// BenchmarkUnary's 16B case does (runUnary), through a Client of a set of
// replicas (dispatch.WithResolver over resolver.Static) beside a Client of
// one address, and gRPC's round_robin over as many backends:
//
//   - mux-one: a plain Client of one mux address, no shortcut: the
//     zerodial-mux 16B row, measured here so that the ratios below come from
//     one run.
//   - mux-1-replica: a Client of replicas (dispatch.WithResolver) over one
//     mux Server: the balancer's own cost beside mux-one, without the cost
//     of taking the calls to three connections in turn.
//   - mux-3-roundrobin, mux-3-leastloaded: a Client of replicas over three
//     mux Servers of this process, each on its own 127.0.0.1:0 listener,
//     with dispatch.RoundRobin or dispatch.LeastLoaded and no shortcut:
//     every call goes over the network, to one of the three.
//   - grpc-3-roundrobin: grpc-go with its round_robin balancer over three
//     loopback TCP backends of the grpc-tcp rows' service, the addresses
//     handed over by a manual resolver.
//   - shortcut-one: a plain Client with WithShortcut(ShortcutCopy) of a
//     Server of this process (over mux): the zerodial-copy path.
//   - shortcut-local-first: a Client of replicas over three mux addresses,
//     with WithShortcut(ShortcutCopy), of which this process serves one; the
//     other two stand for replicas of other processes (see elsewhere).
//     Every call should go to the local one, through the shortcut.
//
// Every zerodial replica serves Arith, registered by reflection as for
// zerodial-mux, and Bench.Where, which answers the replica's number: setup
// calls it through the Client under test to check that the calls go where
// the row says they go (to all three replicas, or to the local one only);
// the timed loop never calls it. The zerodial rows dial through a transport
// that counts its dials (countDial), which tells whether a socket was
// opened: one per replica on the network rows, none on the shortcut rows,
// checked at setup and again when the row ends.

// replicaCount is how many replicas the rows with several have.
const replicaCount = 3

// replicaOrder is the order of the rows of BenchmarkReplicas and of the
// report's Replicas table.
var replicaOrder = []string{
	"mux-one",
	"mux-1-replica",
	"mux-3-roundrobin",
	"mux-3-leastloaded",
	"grpc-3-roundrobin",
	"shortcut-one",
	"shortcut-local-first",
}

// replicaRows are the rows' setups: each starts the servers and returns the
// caller, one shared Client; cleanups stop everything.
var replicaRows = map[string]func(tb testing.TB) callFunc{
	"mux-one": func(tb testing.TB) callFunc {
		return muxReplicas(tb, 1, false, nil)
	},
	"mux-1-replica": func(tb testing.TB) callFunc {
		return muxReplicas(tb, 1, true, nil)
	},
	"mux-3-roundrobin": func(tb testing.TB) callFunc {
		return muxReplicas(tb, replicaCount, true, []dispatch.ClientOption{dispatch.WithBalancer(dispatch.RoundRobin)})
	},
	"mux-3-leastloaded": func(tb testing.TB) callFunc {
		return muxReplicas(tb, replicaCount, true, []dispatch.ClientOption{dispatch.WithBalancer(dispatch.LeastLoaded)})
	},
	"grpc-3-roundrobin": grpcRoundRobin,
	"shortcut-one": func(tb testing.TB) callFunc {
		return shortcutReplicas(tb, false)
	},
	"shortcut-local-first": func(tb testing.TB) callFunc {
		return shortcutReplicas(tb, true)
	},
}

func BenchmarkReplicas(b *testing.B) {
	for _, name := range replicaOrder {
		b.Run(name, func(b *testing.B) {
			runUnary(b, replicaRows[name](b), size16)
		})
	}
}

// whereMethod answers the number of the replica that served the call.
const whereMethod = "Bench.Where"

// serveReplica starts a Server with Arith and Bench.Where (answering i) on
// l, stopped by a cleanup.
func serveReplica(tb testing.TB, l transport.Listener, i int64) {
	srv := dispatch.NewServer()
	err := errors.Join(
		registerReflect(srv),
		dispatch.Handle(srv, whereMethod, func(_ context.Context, _ *int64, where *int64) error {
			*where = i
			return nil
		}),
	)
	if err == nil {
		err = srv.Start(l)
	}
	if err != nil {
		l.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
}

// elsewhere is a listener that does not say what it speaks (it hides its
// transport.WireReporter): dispatch's shortcut cannot tell that a Client
// would be accepted by it, so its Server makes no shortcut entry, and to
// this process's Clients it is what a replica served by another process
// is, an address reached over the network.
type elsewhere struct{ transport.Listener }

// countDial is a mux transport that counts the sockets its Dial opens. It
// passes on everything else the mux transport says (what it speaks, its
// frame limit), so the shortcut treats it as the mux transport.
type countDial struct {
	*mux.Transport
	dials *atomic.Int64
}

func (c countDial) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	c.dials.Add(1)
	return c.Transport.Dial(ctx, addr)
}

// replicaClient dials addrs over tr: a plain Client of addrs[0] when there
// is one address and no resolver among opts, a Client of replicas over
// resolver.Static{addrs} otherwise. It returns the Client, closed by a
// cleanup.
func replicaClient(tb testing.TB, tr transport.Transport, addrs []string, opts ...dispatch.ClientOption) *dispatch.Client {
	return dialReplicas(tb, tr, addrs, len(addrs) > 1, opts...)
}

// dialReplicas is replicaClient, with a Client of replicas even over one
// address when fleet is set.
func dialReplicas(tb testing.TB, tr transport.Transport, addrs []string, fleet bool, opts ...dispatch.ClientOption) *dispatch.Client {
	target := addrs[0]
	if fleet {
		target = "replicas"
		opts = append([]dispatch.ClientOption{dispatch.WithResolver(resolver.Static{Addrs: addrs})}, opts...)
	}
	c, err := dispatch.Dial(context.Background(), tr, target, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// wheres calls Bench.Where n times on c and returns how many calls each
// replica served.
func wheres(tb testing.TB, c *dispatch.Client, n int) map[int64]int {
	got := map[int64]int{}
	for range n {
		var args, where int64
		if err := c.Call(context.Background(), whereMethod, &args, &where); err != nil {
			tb.Fatal(err)
		}
		got[where]++
	}
	return got
}

// callerOf adapts c.
func callerOf(c *dispatch.Client) callFunc {
	return func(ctx context.Context, m method, args, reply any) error {
		return c.Call(ctx, zerodialMethods[m], args, reply)
	}
}

// muxReplicas serves n replicas over mux, each its own Server on its own
// 127.0.0.1:0 listener, and dials them with no shortcut: a Client of
// replicas with opts when fleet is set, else a plain Client of the one.
// Setup checks that calls reach every replica, each over a socket of its
// own.
func muxReplicas(tb testing.TB, n int, fleet bool, opts []dispatch.ClientOption) callFunc {
	tr := mux.New()
	tb.Cleanup(func() { tr.Close() })
	var addrs []string
	for i := range n {
		l, err := tr.Listen("127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		serveReplica(tb, l, int64(i))
		addrs = append(addrs, l.Addr().String())
	}
	dials := new(atomic.Int64)
	c := dialReplicas(tb, countDial{tr, dials}, addrs, fleet, opts...)
	// Round-robin reaches every replica within n calls; least-loaded, with
	// no call in flight, picks at random, so give it enough calls that
	// missing one is as good as impossible.
	if got := wheres(tb, c, 30*n); len(got) != n {
		tb.Fatalf("calls reached replicas %v, want all %d", got, n)
	}
	checkDials(tb, dials, int64(n))
	return callerOf(c)
}

// shortcutReplicas serves Arith in this process over mux and dials it with
// WithShortcut(ShortcutCopy): alone (a plain Client) when !fleet, or as the
// middle one of three replicas when fleet, the other two served elsewhere
// (see elsewhere). Setup checks that every call goes to the local replica
// and that no socket is opened, which means no call left the process.
func shortcutReplicas(tb testing.TB, fleet bool) callFunc {
	tr := mux.New()
	tb.Cleanup(func() { tr.Close() })
	const local = 1
	n := 1
	if fleet {
		n = replicaCount
	}
	var addrs []string
	for i := range n {
		l, err := tr.Listen("127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		if fleet && i != local {
			l = elsewhere{l}
		}
		serveReplica(tb, l, int64(i))
		addrs = append(addrs, l.Addr().String())
	}
	if fleet {
		// The other replicas are real ones, reachable over the network.
		for i, a := range addrs {
			if i == local {
				continue
			}
			c := replicaClient(tb, tr, []string{a})
			if got := wheres(tb, c, 1); got[int64(i)] != 1 {
				tb.Fatalf("replica %d at %s: calls answered by %v", i, a, got)
			}
			c.Close()
		}
	}
	dials := new(atomic.Int64)
	c := replicaClient(tb, countDial{tr, dials}, addrs, dispatch.WithShortcut(dispatch.ShortcutCopy))
	want := int64(0)
	if fleet {
		want = local
	}
	if got := wheres(tb, c, 10); got[want] != 10 {
		tb.Fatalf("calls answered by replicas %v, want all by %d", got, want)
	}
	checkDials(tb, dials, 0)
	return callerOf(c)
}

// checkDials checks that dials sockets have been opened, now and again when
// the row ends (in a cleanup, run after the timed loop): no more are opened
// meanwhile.
func checkDials(tb testing.TB, dials *atomic.Int64, want int64) {
	if got := dials.Load(); got != want {
		tb.Fatalf("the Client opened %d sockets, want %d", got, want)
	}
	tb.Cleanup(func() {
		if got := dials.Load(); got != want {
			tb.Errorf("the Client opened %d sockets by the end, want %d", got, want)
		}
	})
}

// grpcRoundRobin serves Arith on three loopback TCP backends and returns a
// caller of one ClientConn that balances over them with round_robin, the
// addresses given by a manual resolver. Setup waits until calls reach all
// three (round_robin starts picking once one connection is ready, the
// others joining as they connect).
func grpcRoundRobin(tb testing.TB) callFunc {
	var addrs []grpcresolver.Address
	for range replicaCount {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		serveGRPC(tb, ln)
		addrs = append(addrs, grpcresolver.Address{Addr: ln.Addr().String()})
	}
	r := manual.NewBuilderWithScheme("bench")
	r.InitialState(grpcresolver.State{Addresses: addrs})
	cc := dialGRPC(tb, r.Scheme()+":///replicas",
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
	).(*grpc.ClientConn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc.Connect()
	for st := cc.GetState(); st != connectivity.Ready; st = cc.GetState() {
		if !cc.WaitForStateChange(ctx, st) {
			tb.Fatalf("gRPC connection still %v", st)
		}
	}
	seen := map[string]int{}
	for len(seen) < replicaCount {
		var p peer.Peer
		var reply Product
		if err := cc.Invoke(ctx, grpcMethods[multiply], &Args{A: 2, B: 3}, &reply, grpc.Peer(&p)); err != nil {
			tb.Fatal(err)
		}
		seen[p.Addr.String()]++
		if ctx.Err() != nil {
			tb.Fatalf("after 10s, calls reached only %v", seen)
		}
	}
	return grpcCaller(cc)()
}

// TestReplicasRegistered checks that every row in replicaOrder exists and
// the other way round.
func TestReplicasRegistered(t *testing.T) {
	for _, name := range replicaOrder {
		if _, ok := replicaRows[name]; !ok {
			t.Errorf("replica row %s does not exist", name)
		}
	}
	if len(replicaRows) != len(replicaOrder) {
		t.Errorf("%d replica rows, %d in replicaOrder", len(replicaRows), len(replicaOrder))
	}
}

// TestReplicas checks that every row computes the right answers, one call
// at a time and from concurrent callers (their setups check where the calls
// go).
func TestReplicas(t *testing.T) {
	ctx := context.Background()
	for _, name := range replicaOrder {
		t.Run(name, func(t *testing.T) {
			call := replicaRows[name](t)
			var wg sync.WaitGroup
			for g := range int64(8) {
				wg.Go(func() {
					for i := range int64(20) {
						var reply Product
						if err := call(ctx, multiply, &Args{A: g - 3, B: i}, &reply); err != nil {
							t.Error(err)
							return
						}
						if want := (g - 3) * i; reply.P != want {
							t.Errorf("Multiply(%d, %d) = %d, want %d", g-3, i, reply.P, want)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
