package health_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
)

// A Client of replicas checking their health leaves out the replica that
// says NotServing, and takes it back when it serves again.
func TestCheckerLeavesOutNotServing(t *testing.T) {
	tr := memory.New()
	var addrs []string
	var hs []*health.Server
	var calls []*atomic.Int64
	for range 2 {
		srv := dispatch.NewServer()
		t.Cleanup(func() { srv.Close() })
		h := health.NewServer()
		require.NoError(t, h.Register(srv))
		n := new(atomic.Int64)
		require.NoError(t, dispatch.Handle(srv, "Svc.Do", func(ctx context.Context, _ *int, _ *int) error {
			n.Add(1)
			return nil
		}))
		l, err := tr.Listen("")
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		addrs = append(addrs, l.Addr().String())
		hs = append(hs, h)
		calls = append(calls, n)
	}
	h0 := hs[0]
	h0.SetServingStatus("", health.Serving)
	hs[1].SetServingStatus("", health.Serving)
	c, err := dispatch.Dial(t.Context(), tr, strings.Join(addrs, ","),
		dispatch.WithResolver(resolver.Static{}), dispatch.WithReplicaCheck(health.Checker(""), 10*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()

	h0.SetServingStatus("", health.NotServing)
	// Once a check has seen it, replica 0 gets nothing.
	time.Sleep(50 * time.Millisecond)
	before := calls[0].Load()
	for range 20 {
		require.NoError(t, c.Call(t.Context(), "Svc.Do", 1, new(int)))
	}
	assert.Equal(t, before, calls[0].Load())
	assert.GreaterOrEqual(t, calls[1].Load(), int64(20))

	h0.SetServingStatus("", health.Serving)
	require.Eventually(t, func() bool {
		require.NoError(t, c.Call(t.Context(), "Svc.Do", 1, new(int)))
		return calls[0].Load() > before
	}, 10*time.Second, 5*time.Millisecond)
}
