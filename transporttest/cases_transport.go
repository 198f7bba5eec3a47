package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// closeHangGuard bounds what the Transport's Close must bring about: it
// tells a socket that never ends from one that ends, however loaded the
// machine, and measures nothing.
const closeHangGuard = 20 * time.Second

// testTransportClose: the Transport's Close closes the sockets it dialled
// — a Send or Recv on the dialling end fails with ErrClosed, a Recv
// blocked there included, and the accepted end sees the connection end —
// and Dial fails with ErrClosed from then on. The listener serves on:
// another Transport's Dial is accepted and served.
func testTransportClose(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	// The accepted end has the connection, and what was sent on it,
	// before Close. A socket the listener has not yet accepted is no peer
	// to watch: a Transport may drop it when the connection ends (mux's
	// listener does).
	var m transport.Message
	require.NoError(t, c.Send(&transport.Message{Body: []byte("before")}))
	require.NoError(t, s.Recv(&m))
	require.Equal(t, "before", string(m.Body))

	localErr := make(chan error, 1)
	peerErr := make(chan error, 1)
	go func() { localErr <- c.Recv(&transport.Message{}) }()
	go func() { peerErr <- s.Recv(&transport.Message{}) }()
	require.NoError(t, e.tr.Close())

	select {
	case err := <-localErr:
		assert.ErrorIs(t, err, transport.ErrClosed, "a Recv blocked on the dialled socket")
	case <-time.After(closeHangGuard):
		t.Fatal("a Recv blocked on the dialled socket still waits after the Transport's Close")
	}
	select {
	case err := <-peerErr:
		assert.Error(t, err, "the accepted end's Recv")
		assert.NotErrorIs(t, err, transport.ErrTimeout, "the accepted end's Recv")
	case <-time.After(closeHangGuard):
		t.Fatal("the accepted end did not see its connection end after the Transport's Close")
	}
	assert.ErrorIs(t, c.Send(&transport.Message{Body: []byte("after")}), transport.ErrClosed, "Send after the Transport's Close")
	assert.ErrorIs(t, c.Recv(&m), transport.ErrClosed, "Recv after the Transport's Close")
	assert.NoError(t, c.Close(), "closing a socket the Transport closed")

	ctx, cancel := context.WithTimeout(context.Background(), closeHangGuard)
	defer cancel()
	_, err := e.tr.Dial(ctx, l.Addr().String())
	assert.ErrorIs(t, err, transport.ErrClosed, "Dial after Close")
	assert.NoError(t, e.tr.Close(), "Close again")

	// The listener serves on.
	if cr, ok := l.(transport.ClosedReporter); ok {
		assert.False(t, cr.Closed(), "the listener was closed with the Transport")
	}
	if _, ok := l.Addr().(transport.AddrSpacer); ok {
		// Its address is of e.tr's space alone (memory's), whose Dial
		// is over: no other Transport reaches it.
		return
	}
	other, _ := e.mk(t)
	t.Cleanup(func() { other.Close() })
	e.echo(l)
	c2, err := other.Dial(ctx, l.Addr().String())
	require.NoError(t, err, "another Transport's Dial to the listener")
	t.Cleanup(func() { c2.Close() })
	msg := &transport.Message{Body: []byte("served on")}
	requireSame(t, msg, roundTrip(t, c2, msg))
}
