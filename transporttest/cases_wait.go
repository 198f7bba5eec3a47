package transporttest

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// testFrameWaiter holds a transport.FrameWaiter's sockets to its contract:
// WaitFrame returns once a message has come and takes none of it, so the
// Recvs that follow get every message in order; a read deadline that
// passes while it waits fails it with a timeout and leaves the socket
// usable; and it fails as Recv would after Close and after the peer's
// Close. Each end that claims it is held to it; Transports whose Sockets
// claim it at neither end skip the case.
func testFrameWaiter(t *testing.T, e *env) {
	e.eachEnd(SocketFrameWaiter, func(t *testing.T, e *env, x end) {
		c, s := x.s, x.peer
		w := as[transport.FrameWaiter](t, c, SocketFrameWaiter)
		var m transport.Message

		// A WaitFrame waiting when the message comes.
		got := make(chan error, 1)
		go func() { got <- w.WaitFrame() }()
		blocks(t, got, "WaitFrame with no message sent")
		require.NoError(t, s.Send(&transport.Message{Header: map[string]string{"n": "0"}, Body: []byte("zero")}))
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(waitLong):
			t.Fatal("WaitFrame did not return when a message came")
		}

		// Waiting again takes nothing: the messages come in order.
		require.NoError(t, s.Send(&transport.Message{Header: map[string]string{"n": "1"}, Body: []byte("one")}))
		require.NoError(t, w.WaitFrame())
		require.NoError(t, c.Recv(&m))
		assert.Equal(t, "0", m.Header["n"])
		assert.Equal(t, "zero", string(m.Body))
		require.NoError(t, w.WaitFrame())
		require.NoError(t, c.Recv(&m))
		assert.Equal(t, "1", m.Header["n"])
		assert.Equal(t, "one", string(m.Body))

		// A deadline that passes while it waits; then the socket works again.
		require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Millisecond)))
		within(t, waitLong, "WaitFrame with a deadline", func() { requireTimeout(t, w.WaitFrame()) })
		requireTimeout(t, w.WaitFrame()) // still past: at once
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		require.NoError(t, s.Send(&transport.Message{Body: []byte("after")}))
		require.NoError(t, w.WaitFrame())
		require.NoError(t, c.Recv(&m))
		assert.Equal(t, "after", string(m.Body))

		// The peer's Close: what it sent first is there, then io.EOF.
		require.NoError(t, s.Send(&transport.Message{Body: []byte("last")}))
		require.NoError(t, s.Close())
		require.NoError(t, w.WaitFrame())
		require.NoError(t, c.Recv(&m))
		assert.Equal(t, "last", string(m.Body))
		assert.ErrorIs(t, w.WaitFrame(), io.EOF)
		assert.ErrorIs(t, c.Recv(&m), io.EOF)

		// The local Close ends a WaitFrame that waits, and fails the next.
		c2 := x.pick(e.dial(x.l))
		w2 := as[transport.FrameWaiter](t, c2, SocketFrameWaiter)
		go func() { got <- w2.WaitFrame() }()
		blocks(t, got, "WaitFrame with no message sent")
		require.NoError(t, c2.Close())
		select {
		case err := <-got:
			assert.ErrorIs(t, err, transport.ErrClosed)
		case <-time.After(waitLong):
			t.Fatal("WaitFrame still blocked after Close")
		}
		assert.ErrorIs(t, w2.WaitFrame(), transport.ErrClosed)
	})
}

// blocks fails the test if what returns on got returns within 20 ms:
// nothing it waits for has happened. Past that, it has most likely begun
// to wait, so that what the test does next finds it waiting; if it has
// not, the case still holds, and tests less.
func blocks(t *testing.T, got <-chan error, what string) {
	t.Helper()
	select {
	case err := <-got:
		t.Fatalf("%s returned (%v) before anything came", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}
