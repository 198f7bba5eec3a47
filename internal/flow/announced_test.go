package flow_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/internal/flow"
)

// Announced waits for the receiver's first grant, and only for it: a
// window known from the start, or announced, ends the wait; an abort
// before any announcement is its error; after one, the stream was
// established, and Announced says so.
func TestCreditAnnounced(t *testing.T) {
	require.NoError(t, flow.NewCredit(10, true).Announced(now{}))

	c := flow.NewCredit(0, false)
	require.NoError(t, c.Acquire(100, now{}), "one message may go before the window is known")
	wouldWait(t, c.Announced(now{}))
	w := newStopper(nil)
	done := make(chan error, 1)
	go func() { done <- c.Announced(w) }()
	w.blocked(t)
	require.Empty(t, done, "announced without a grant")
	c.Grant(1000)
	require.NoError(t, result(t, done))
	c.Abort(errors.New("ended later"))
	require.NoError(t, c.Announced(now{}), "established, then ended: it was announced")

	errRefused := errors.New("refused")
	c = flow.NewCredit(0, false)
	go func() { done <- c.Announced(w) }()
	w.blocked(t)
	c.Abort(errRefused)
	require.Equal(t, errRefused, result(t, done))

	errStop := errors.New("context ended")
	c = flow.NewCredit(0, false)
	w = newStopper(errStop)
	go func() { done <- c.Announced(w) }()
	w.blocked(t)
	close(w.stop)
	require.Equal(t, errStop, result(t, done))
	require.NoError(t, c.Acquire(1, now{}), "Announced took no credit")
	c.Grant(10)
	require.NoError(t, c.Announced(w), "announced, then the waiter stopped: it was announced")
}
