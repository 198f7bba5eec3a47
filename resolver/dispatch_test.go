package resolver_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// A dispatch Client of replicas found through DNS follows the SRV records
// as they change: the replicas first named take the calls, then those
// named instead.
func TestDNSClientFollowsSRV(t *testing.T) {
	tr := tcp.New()
	ports := map[string]uint16{}
	for _, name := range []string{"a", "b", "c"} {
		srv := dispatch.NewServer()
		require.NoError(t, dispatch.Handle(srv, "Who.Am", func(_ context.Context, _ *int, who *string) error {
			*who = name
			return nil
		}))
		l, err := tr.Listen("127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		t.Cleanup(func() { srv.Close() })
		_, port, err := net.SplitHostPort(l.Addr().String())
		require.NoError(t, err)
		p, err := strconv.ParseUint(port, 10, 16)
		require.NoError(t, err)
		ports[name] = uint16(p)
	}
	s := newDNSServer(t)
	s.setHost("replicas.svc.test.", "127.0.0.1")
	srvOf := func(names ...string) []net.SRV {
		var rs []net.SRV
		for _, n := range names {
			rs = append(rs, net.SRV{Target: "replicas.svc.test.", Port: ports[n], Priority: 1, Weight: 1})
		}
		return rs
	}
	const name = "_rpc._tcp.svc.test."
	s.setSRV(name, srvOf("a", "b")...)

	c, err := dispatch.Dial(t.Context(), tr, name,
		dispatch.WithResolver(resolver.DNS{Resolver: s.resolver(), Interval: 20 * time.Millisecond, MinRefresh: 10 * time.Millisecond}))
	require.NoError(t, err)
	defer c.Close()
	seen := func(n int) map[string]int {
		got := map[string]int{}
		for range n {
			var who string
			require.NoError(t, c.Call(t.Context(), "Who.Am", new(int), &who))
			got[who]++
		}
		return got
	}
	require.Equal(t, map[string]int{"a": 3, "b": 3}, seen(6))

	s.setSRV(name, srvOf("b", "c")...)
	require.Eventually(t, func() bool {
		got := seen(6)
		return got["a"] == 0 && got["c"] > 0
	}, 10*time.Second, 20*time.Millisecond, "the Client did not follow the SRV records")
}
