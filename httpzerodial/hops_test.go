package httpzerodial_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// A handler that returns the failure of a call of its own — here its
// Client of another service, closed — answers its caller over HTTP as on
// zerodial's wire: internal, with the handler's words, which name the
// method that failed one hop away. Before, both gave unknown and the
// words of a local ErrShutdown, "connection is shut down".
func TestParityPassedOnFailure(t *testing.T) {
	m := memory.New()
	down := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(down, "Stock.Reserve", func(ctx context.Context, n *int, reply *int) error {
		*reply = *n
		return nil
	}))
	l, err := m.Listen("")
	require.NoError(t, err)
	require.NoError(t, down.Start(l))
	t.Cleanup(func() { down.Close() })
	dc, err := dispatch.Dial(context.Background(), m, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutOff))
	require.NoError(t, err)
	require.NoError(t, dc.Close())

	srv := dispatch.NewServer()
	seen := make(chan error, 8)
	require.NoError(t, dispatch.Handle(srv, "Orders.Place", func(ctx context.Context, p *Pair, reply *int) error {
		err := dc.Call(ctx, "Stock.Reserve", &p.A, reply)
		seen <- err
		return err
	}))
	callers, _ := onBoth(t, srv)
	for path, call := range callers {
		assert.Equal(t, outcome{code: dispatch.CodeInternal, msg: "Stock.Reserve over memory: connection is shut down"},
			call(context.Background(), "Orders.Place", Pair{A: 1}), path)
	}
	for range callers {
		err := <-seen
		assert.True(t, errors.Is(err, dispatch.ErrShutdown), "the handler's own call failed as its Client's: %v", err)
	}
}
