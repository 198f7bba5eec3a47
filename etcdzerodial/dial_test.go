package etcdzerodial_test

import (
	"context"
	"testing"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/etcdzerodial"
	"github.com/zerodial/transport/tcp"
)

// A dispatch Client of the service, through the Resolver, calls both
// servers registered over TCP; once one shuts down, it calls the other
// alone, and no call fails.
func TestDialWithResolver(t *testing.T) {
	etcd := startEtcd(t)
	cli := etcd.newClient(t)
	tr := tcp.New()
	srv1, addr1 := startServer(t, tr)
	srv2, addr2 := startServer(t, tr)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	register(t, cli, srv1, "Echo", addr1)
	register(t, cli, srv2, "Echo", addr2)

	c, err := dispatch.Dial(ctx, tr, "Echo", dispatch.WithResolver(etcdzerodial.NewResolver(cli)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// calls makes n calls and counts them by the server that answered.
	calls := func(n int) map[string]int {
		t.Helper()
		got := map[string]int{}
		for range n {
			var addr string
			if err := c.Call(ctx, "Echo.Addr", &struct{}{}, &addr); err != nil {
				t.Fatal(err)
			}
			got[addr]++
		}
		return got
	}
	// Dial returns once a first set is reported, which may hold one server
	// (the other registered a moment after): wait for both.
	for got := calls(2); got[addr1] == 0 || got[addr2] == 0; got = calls(2) {
		if ctx.Err() != nil {
			t.Fatalf("the calls went to %v, not to both of %s and %s", got, addr1, addr2)
		}
	}

	if err := srv1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := calls(20); got[addr2] != 20 {
		t.Errorf("after %s shut down, the calls went to %v", addr1, got)
	}
}
