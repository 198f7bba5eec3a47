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

// waitLong bounds a wait for what must happen: generous, since the machine
// may be loaded; only a failing test waits that long.
const waitLong = 20 * time.Second

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
	// Once a check has seen it, replica 0 gets nothing: batches of 20
	// calls, of which round-robin gives it half while it is in, until one
	// batch goes all elsewhere (rather than one batch after 50 ms, within
	// which a loaded machine need not have run a check); then another.
	batch := func() (int64, int64) {
		before0, before1 := calls[0].Load(), calls[1].Load()
		for range 20 {
			require.NoError(t, c.Call(t.Context(), "Svc.Do", 1, new(int)))
		}
		return calls[0].Load() - before0, calls[1].Load() - before1
	}
	for deadline := time.Now().Add(waitLong); ; {
		if to0, _ := batch(); to0 == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica 0 still called %v after it said NotServing", waitLong)
		}
		time.Sleep(time.Millisecond)
	}
	to0, to1 := batch()
	assert.Zero(t, to0, "calls to replica 0 once a check saw it NotServing")
	assert.Equal(t, int64(20), to1)
	before := calls[0].Load()

	h0.SetServingStatus("", health.Serving)
	require.Eventually(t, func() bool {
		require.NoError(t, c.Call(t.Context(), "Svc.Do", 1, new(int)))
		return calls[0].Load() > before
	}, waitLong, 5*time.Millisecond)
}
