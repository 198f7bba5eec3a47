package etcdzerodial_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/etcdzerodial"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
)

// The resolver is a resolver.Resolver.
var _ resolver.Resolver = (*etcdzerodial.Resolver)(nil)

const wait = 10 * time.Second // for what should take well under a second

// startServer starts a dispatch Server on tr serving Echo.Addr, which
// answers with the server's address; it is closed when the test ends.
func startServer(t *testing.T, tr transport.Transport) (*dispatch.Server, string) {
	t.Helper()
	srv := dispatch.NewServer()
	l, err := tr.Listen(listenAddr(tr))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := dispatch.Handle(srv, "Echo.Addr", func(_ context.Context, _ *struct{}, reply *string) error {
		*reply = addr
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, addr
}

// listenAddr is an address for tr to pick a free one at: on loopback for
// the network.
func listenAddr(tr transport.Transport) string {
	if tr.String() == "memory" {
		return ""
	}
	return "127.0.0.1:0"
}

// resolve follows service with a Resolver of cli; the Watch is closed
// when the test ends.
func resolve(t *testing.T, cli *clientv3.Client, service string, opts ...etcdzerodial.Option) *recorder {
	t.Helper()
	rec := newRecorder(t)
	w, err := etcdzerodial.NewResolver(cli, opts...).Resolve(service, rec.report)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
		rec.closed.Store(true)
	})
	return rec
}

func register(t *testing.T, cli *clientv3.Client, srv *dispatch.Server, service, addr string, opts ...etcdzerodial.Option) *etcdzerodial.Registration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	reg, err := etcdzerodial.Register(ctx, cli, srv, service, addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// Two servers registered are both reported; a server that shuts down is
// withdrawn as its Shutdown begins, and the other's Close withdraws it too.
func TestRegisterAndShutdown(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	tr := memory.New()
	srv1, addr1 := startServer(t, tr)
	srv2, addr2 := startServer(t, tr)

	rec := resolve(t, cli, "Echo")
	rec.waitFor(nil, wait) // nothing registered yet: ErrNoAddresses
	if _, _, err := rec.state(); !errors.Is(err, resolver.ErrNoAddresses) {
		t.Fatalf("with no server the resolver reports %v, want resolver.ErrNoAddresses", err)
	}

	reg1 := register(t, cli, srv1, "Echo", addr1)
	if want := "/zerodial/services/Echo/" + addr1; reg1.Key() != want {
		t.Errorf("Key() = %q, want %q", reg1.Key(), want)
	}
	register(t, cli, srv2, "Echo", addr2)
	rec.waitFor([]string{addr1, addr2}, wait)

	// A server of another service, whose name begins with the same
	// letters, is not one of Echo's.
	_, addr3 := startServer(t, tr)
	register(t, cli, nil, "EchoToo", addr3)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rec.waitFor([]string{addr2}, wait)

	srv2.Close()
	rec.waitFor(nil, wait)
	if got := keys(t, cli, "/zerodial/services/Echo/"); len(got) != 0 {
		t.Errorf("after both servers stopped, etcd still has %v", got)
	}
}

// Bug: with nothing in flight, Shutdown returned before the withdrawal it
// had started was done, so that a process exiting then left its key in
// etcd for a whole lease (4–6 of 6 processes in one run). When Shutdown
// returns, the key is gone; each server here shuts down at once after
// registering, as a process does whose work is over.
func TestShutdownWithdrawsBeforeReturning(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	tr := memory.New()
	for i := range 6 {
		srv, addr := startServer(t, tr)
		register(t, cli, srv, "Echo", addr)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := srv.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(t, cli, "/zerodial/services/Echo/"); len(got) != 0 {
			t.Errorf("server %d: when Shutdown returned, etcd still had %v", i, got)
		}
	}
}

// A registration whose process dies (here: whose etcd client is closed,
// with nothing revoked) goes when its lease expires, and the resolver
// follows.
func TestLeaseExpiresWhenProcessDies(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	dying := etcd.newClient(t)
	tr := memory.New()
	srv1, addr1 := startServer(t, tr)
	srv2, addr2 := startServer(t, tr)

	rec := resolve(t, cli, "Echo")
	register(t, cli, srv1, "Echo", addr1)
	reg := register(t, dying, srv2, "Echo", addr2, etcdzerodial.WithTTL(2*time.Second))
	rec.waitFor([]string{addr1, addr2}, wait)

	killed := time.Now()
	dying.Close() // the keep-alives stop; the lease is not revoked
	rec.waitFor([]string{addr1}, 10*time.Second)
	if took := time.Since(killed); took < time.Second {
		t.Errorf("the key went %v after the client closed: sooner than its lease's TTL", took)
	}
	t.Logf("the key went %v after its keep-alives stopped (TTL 2 s)", time.Since(killed).Round(10*time.Millisecond))
	// Closing it now cannot reach etcd (the client is closed), and says so.
	if err := reg.Close(); err == nil {
		t.Error("Close with the client closed returned nil")
	}
}

// Registration.Close withdraws the key and revokes its lease, at once; a
// second Close returns the first's result.
func TestRegistrationClose(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	rec := resolve(t, cli, "Echo", etcdzerodial.WithPrefix("/elsewhere/"))

	reg := register(t, cli, nil, "Echo", "10.0.0.1:7000", etcdzerodial.WithPrefix("/elsewhere/"))
	rec.waitFor([]string{"10.0.0.1:7000"}, wait)
	lease := keys(t, cli, "/elsewhere/Echo/")["/elsewhere/Echo/10.0.0.1:7000"]
	if lease == clientv3.NoLease {
		t.Fatal("the key is not bound to a lease")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ttl, err := cli.TimeToLive(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.GrantedTTL != int64(etcdzerodial.DefaultTTL/time.Second) {
		t.Errorf("granted TTL %d s, want %v", ttl.GrantedTTL, etcdzerodial.DefaultTTL)
	}

	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, cli, "/elsewhere/"); len(got) != 0 {
		t.Errorf("after Close etcd still has %v", got)
	}
	if ttl, err := cli.TimeToLive(ctx, lease); err != nil || ttl.TTL != -1 {
		t.Errorf("after Close the lease has TTL %d (err %v), want -1 (revoked)", ttl.TTL, err)
	}
	rec.waitFor(nil, wait)
	if err := reg.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	ctx := context.Background()
	for _, c := range []struct {
		name          string
		cli           *clientv3.Client
		service, addr string
	}{
		{"nil client", nil, "Echo", "a:1"},
		{"empty service", cli, "", "a:1"},
		{"service with a slash", cli, "Echo/v2", "a:1"},
		{"empty address", cli, "Echo", ""},
	} {
		if reg, err := etcdzerodial.Register(ctx, c.cli, nil, c.service, c.addr); err == nil {
			reg.Close()
			t.Errorf("%s: Register succeeded", c.name)
		}
	}
	for _, target := range []string{"", "Echo/v2"} {
		if w, err := etcdzerodial.NewResolver(cli).Resolve(target, func([]string, error) {}); err == nil {
			w.Close()
			t.Errorf("Resolve(%q) succeeded", target)
		}
	}
	if _, err := (&etcdzerodial.Resolver{}).Resolve("Echo", func([]string, error) {}); err == nil {
		t.Error("Resolve of a zero Resolver succeeded")
	}
	// A context that has ended: nothing is registered.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if reg, err := etcdzerodial.Register(ended, cli, nil, "Echo", "a:1"); err == nil {
		reg.Close()
		t.Error("Register with an ended context succeeded")
	}
	if got := keys(t, cli, "/zerodial/"); len(got) != 0 {
		t.Errorf("etcd has %v", got)
	}
}

// Registering a server that has already begun to stop withdraws it at once.
func TestRegisterStoppedServer(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	srv, addr := startServer(t, memory.New())
	srv.Close()
	rec := resolve(t, cli, "Echo")
	register(t, cli, srv, "Echo", addr)
	deadline := time.Now().Add(wait)
	for len(keys(t, cli, "/zerodial/")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the registration of a stopped server stays")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec.waitFor(nil, wait)
}

// A watch whose revision was compacted away before it began is made again
// after a fresh read, which finds what the lost watch would have told.
func TestResolverCompactedWatch(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cli.Put(ctx, "/zerodial/services/Echo/a:1", "a:1"); err != nil {
		t.Fatal(err)
	}
	reads := make(chan struct{}, 10)
	first := true
	// Removed after the Watch's Close (the cleanups run last first).
	t.Cleanup(etcdzerodial.SetTestHookRead(func() {
		if first {
			// Between the read and the watch: a change, then compaction
			// past it, so that the watch from the read's revision fails.
			first = false
			if _, err := cli.Put(ctx, "/zerodial/services/Echo/b:2", "b:2"); err != nil {
				t.Error(err)
				return
			}
			resp, err := cli.Put(ctx, "/unrelated", "x") // past b:2's revision
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
				t.Error(err)
			}
		}
		reads <- struct{}{}
	}))
	rec := resolve(t, cli, "Echo")
	rec.waitFor([]string{"a:1", "b:2"}, wait)
	for i := range 2 { // the hook runs after the read's report: wait for it
		select {
		case <-reads:
		case <-time.After(wait):
			t.Fatalf("%d reads, want 2 (the watch was compacted)", i)
		}
	}
	// And it watches from there.
	if _, err := cli.Delete(ctx, "/zerodial/services/Echo/a:1"); err != nil {
		t.Fatal(err)
	}
	rec.waitFor([]string{"b:2"}, wait)
}

// Refresh, even from report, reads again; an unchanged set is not reported
// again. A key put by hand without a value stands for the address that
// ends it.
func TestResolverRefresh(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cli.Put(ctx, "/zerodial/services/Echo/a:1", ""); err != nil {
		t.Fatal(err)
	}
	reads := make(chan struct{}, 100)
	defer etcdzerodial.SetTestHookRead(func() { reads <- struct{}{} })()

	var w resolver.Watch
	ready := make(chan struct{})
	rec := newRecorder(t)
	w, err := etcdzerodial.NewResolver(cli).Resolve("Echo", func(addrs []string, err error) {
		rec.report(addrs, err)
		<-ready
		w.Refresh() // from report: must not block
	})
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	defer func() {
		w.Close()
		rec.closed.Store(true)
	}()
	rec.waitFor([]string{"a:1"}, wait)
	for range 2 {
		select {
		case <-reads:
		case <-time.After(wait):
			t.Fatal("Refresh did not read again")
		}
	}
	if _, n, _ := rec.state(); n != 1 {
		t.Errorf("%d reports of an unchanged set, want 1", n)
	}
}
