package transporttest

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

func testCloseUnblocksRecv(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)

	// A Recv blocked on each end; closing the client ends both.
	clientErr := make(chan error, 1)
	serverErr := make(chan error, 1)
	go func() { clientErr <- c.Recv(&transport.Message{}) }()
	go func() { serverErr <- s.Recv(&transport.Message{}) }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, c.Close())

	for _, w := range []struct {
		name string
		ch   chan error
		want error
	}{{"local Recv", clientErr, transport.ErrClosed}, {"peer Recv", serverErr, io.EOF}} {
		select {
		case err := <-w.ch:
			assert.ErrorIs(t, err, w.want, w.name)
		case <-time.After(waitLong):
			t.Fatalf("%s still blocked after Close", w.name)
		}
	}

	// After Close: every call fails at once with ErrClosed; Close again is fine.
	assert.ErrorIs(t, c.Send(&transport.Message{Body: []byte("x")}), transport.ErrClosed)
	assert.ErrorIs(t, c.Recv(&transport.Message{}), transport.ErrClosed)
	assert.ErrorIs(t, c.Recv(&transport.Message{}), net.ErrClosed, "ErrClosed matches net.ErrClosed")
	assert.NotPanics(t, func() { c.Close() })
}

// fill sends on c until a Send blocks (the peer is not reading) or fails;
// it returns the error that ended it, which arrives once something unblocks
// the Send.
func fill(c transport.Socket) <-chan error {
	done := make(chan error, 1)
	go func() {
		m := &transport.Message{Body: make([]byte, 64<<10)}
		for {
			if err := c.Send(m); err != nil {
				done <- err
				return
			}
		}
	}()
	return done
}

func testCloseUnblocksSend(t *testing.T, e *env) {
	l := e.listen()

	t.Run("local", func(t *testing.T) {
		c, _ := e.dial(l)
		done := fill(c)
		time.Sleep(200 * time.Millisecond) // let the buffers fill and Send block
		require.NoError(t, c.Close())
		select {
		case err := <-done:
			assert.ErrorIs(t, err, transport.ErrClosed)
		case <-time.After(waitLong):
			t.Fatal("Send still blocked after Close")
		}
	})
	t.Run("peer", func(t *testing.T) {
		c, s := e.dial(l)
		done := fill(c)
		time.Sleep(200 * time.Millisecond)
		require.NoError(t, s.Close())
		select {
		case err := <-done:
			assert.Error(t, err)
			assert.NotErrorIs(t, err, transport.ErrClosed, "the local end is still open")
		case <-time.After(waitLong):
			t.Fatal("Send still blocked after the peer closed")
		}
	})
}

// testPeerCloseDrains: messages sent before Close are still received, then
// io.EOF.
func testPeerCloseDrains(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	for i := range 3 {
		require.NoError(t, c.Send(&transport.Message{Body: []byte{byte(i)}}))
	}
	require.NoError(t, c.Close())
	var m transport.Message
	for i := range 3 {
		require.NoError(t, s.Recv(&m))
		require.Equal(t, []byte{byte(i)}, m.Body)
	}
	require.ErrorIs(t, s.Recv(&m), io.EOF)
}

func requireTimeout(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var ne net.Error
	require.True(t, errors.As(err, &ne), "%v (%T) is not a net.Error", err, err)
	require.True(t, ne.Timeout(), "Timeout() is false for %v", err)
	require.ErrorIs(t, err, transport.ErrTimeout)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

func testReadDeadline(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	var m transport.Message

	// A deadline that passes while Recv waits.
	// start is taken before the deadline is set, which cannot pass before
	// it: taken after, on a loaded machine, it was late by as much.
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	within(t, waitLong, "Recv with a deadline", func() { requireTimeout(t, c.Recv(&m)) })
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "returned before the deadline")

	// Still past: fails at once.
	requireTimeout(t, c.Recv(&m))

	// Cleared: the socket works again.
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	require.NoError(t, s.Send(&transport.Message{Body: []byte("after")}))
	require.NoError(t, c.Recv(&m))
	assert.Equal(t, "after", string(m.Body))

	// A deadline moved later while Recv waits is honoured.
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Hour)))
	got := make(chan error, 1)
	go func() { got <- c.Recv(&m) }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	select {
	case err := <-got:
		requireTimeout(t, err)
	case <-time.After(waitLong):
		t.Fatal("Recv ignored a deadline set while it waited")
	}
}

// testWriteDeadlinePast: a write deadline already past fails Send at once
// with a timeout and sends nothing; cleared, the socket works again.
func testWriteDeadlinePast(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
	requireTimeout(t, c.Send(&transport.Message{Body: []byte("late")}))
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	require.NoError(t, c.Send(&transport.Message{Body: []byte("on time")}))
	var m transport.Message
	require.NoError(t, s.Recv(&m))
	assert.Equal(t, "on time", string(m.Body))
}

func testListenerClose(t *testing.T, e *env) {
	l, err := e.tr.Listen(e.addr)
	require.NoError(t, err)
	addr := l.Addr().String()

	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, l.Close())
	select {
	case err := <-accepted:
		assert.ErrorIs(t, err, transport.ErrClosed)
	case <-time.After(waitLong):
		t.Fatal("Accept still blocked after Close")
	}
	_, err = l.Accept()
	assert.ErrorIs(t, err, transport.ErrClosed)
	assert.NotPanics(t, func() { l.Close() })

	// Nobody listens now: Dial is refused.
	_, err = e.tr.Dial(t.Context(), addr)
	assert.ErrorIs(t, err, transport.ErrConnectionRefused)

	// The address is free again at once.
	l2, err := e.tr.Listen(addr)
	require.NoError(t, err, "the closed listener's address is still taken")
	e.t.Cleanup(func() { l2.Close() })
	e.echo(l2)
	c := e.dialTo(addr)
	requireSame(t, &transport.Message{Body: []byte("again")}, roundTrip(t, c, &transport.Message{Body: []byte("again")}))
}

func testListenAddrInUse(t *testing.T, e *env) {
	l := e.listen()
	_, err := e.tr.Listen(l.Addr().String())
	require.Error(t, err, "two listeners on one address")
}

func testDialRefused(t *testing.T, e *env) {
	l, err := e.tr.Listen(e.addr)
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	start := time.Now()
	_, err = e.tr.Dial(t.Context(), addr)
	assert.ErrorIs(t, err, transport.ErrConnectionRefused)
	assert.Less(t, time.Since(start), belowHandshake, "refusal was not prompt")
}

// testAcceptedOutlivesListener: closing a listener leaves the sockets it
// already accepted working, in both directions.
func testAcceptedOutlivesListener(t *testing.T, e *env) {
	l, err := e.tr.Listen(e.addr)
	require.NoError(t, err)
	c, s := e.dial(l)
	require.NoError(t, l.Close())
	var m transport.Message
	require.NoError(t, c.Send(&transport.Message{Body: []byte("ping")}))
	require.NoError(t, s.Recv(&m))
	assert.Equal(t, "ping", string(m.Body))
	require.NoError(t, s.Send(&transport.Message{Body: []byte("pong")}))
	require.NoError(t, c.Recv(&m))
	assert.Equal(t, "pong", string(m.Body))
}
