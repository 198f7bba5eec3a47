package etcdzerodial_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerodial/transport/etcdzerodial"
)

// testLogger logs to t, for the diagnostics of a test that is meant to go
// through trouble.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// etcd stopped for longer than a registration's TTL and started again: the
// registration's keep-alives are lost, and it registers again under a new
// lease once etcd is back; the resolver's watch goes on across the
// restart.
func TestEtcdRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("stops etcd for 9 s")
	}
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	other := etcd.newClient(t)
	const key = "/zerodial/services/Echo/a:1"
	register(t, cli, nil, "Echo", "a:1", etcdzerodial.WithTTL(2*time.Second), etcdzerodial.WithLogger(testLogger(t)))
	rec := resolve(t, other, "Echo", etcdzerodial.WithLogger(testLogger(t)))
	rec.waitFor([]string{"a:1"}, wait)
	old := keys(t, other, key)[key]

	// etcd's Close waits up to 5 s for the streams open to it (a lease's
	// keep-alives are answered meanwhile); then it is down for 3.5 s, and
	// the client gives the lease up 2 s (the TTL) after the last answer.
	etcd.stop()
	time.Sleep(3500 * time.Millisecond)
	etcd.start()
	restarted := time.Now()

	// The key is put again under a new lease (and the old one, if etcd
	// still has it, revoked).
	var lease clientv3.LeaseID
	deadline := time.Now().Add(20 * time.Second)
	for lease = keys(t, other, key)[key]; lease == old || lease == clientv3.NoLease; lease = keys(t, other, key)[key] {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after etcd restarted the key's lease is %x, the lost one %x", lease, old)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("registered again %v after etcd restarted", time.Since(restarted).Round(10*time.Millisecond))
	// Beyond the old lease's expiry, the key stays, kept alive.
	time.Sleep(2500 * time.Millisecond)
	if got := keys(t, other, key)[key]; got != lease {
		t.Fatalf("after the old lease's TTL the key's lease is %x, want %x", got, lease)
	}

	// The resolver's watch goes on: it sees a server registered now.
	register(t, other, nil, "Echo", "b:2")
	rec.waitFor([]string{"a:1", "b:2"}, wait)
}

// A lease lost while etcd is up (revoked behind the registration's back,
// as an etcd that lost its data would have it) is replaced at once: the
// key comes back under a new lease.
func TestRegistrationLeaseLost(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	const key = "/zerodial/services/Echo/a:1"
	register(t, cli, nil, "Echo", "a:1", etcdzerodial.WithTTL(2*time.Second), etcdzerodial.WithLogger(testLogger(t)))
	rec := resolve(t, cli, "Echo")
	rec.waitFor([]string{"a:1"}, wait)

	old := keys(t, cli, key)[key]
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cli.Revoke(ctx, old); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(nil, wait)
	rec.waitFor([]string{"a:1"}, wait)
	if lease := keys(t, cli, key)[key]; lease == old || lease == clientv3.NoLease {
		t.Fatalf("the key's lease is %x; the revoked one was %x", lease, old)
	}
}

// A Watch whose etcd client is closed reports the error once, and stops
// reading; its Close returns.
func TestResolverClientClosed(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	register(t, etcd.newClient(t), nil, "Echo", "a:1")
	rec := resolve(t, cli, "Echo")
	rec.waitFor([]string{"a:1"}, wait)
	cli.Close()
	rec.waitFor(nil, wait)
	time.Sleep(500 * time.Millisecond)
	if _, n, err := rec.state(); n != 2 {
		t.Errorf("%d reports (the last: %v), want 2: the set, then the closed client's error", n, err)
	}
}
