package shm_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/shm"
)

// pair dials a listener of tr and returns both ends, closed when t ends.
func pair(t *testing.T, tr *shm.Transport) (client, server transport.Socket) {
	t.Helper()
	l, err := tr.Listen("")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()
	c, err := tr.Dial(ctx, l.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s, err := l.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return c, s
}

// TestPeerStopsReading: a peer that reads nothing holds no more than the
// ring: Send waits once it is full, its write deadline ends the wait
// with ErrTimeout, and Close ends a Send waiting without one.
func TestPeerStopsReading(t *testing.T) {
	skipUnlessLinux(t)
	const ring, size = 64 << 10, 8 << 10
	tr := shm.New(shm.WithRingSize(ring))
	defer tr.Close()
	c, _ := pair(t, tr)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(100*time.Millisecond)))
	sent := 0
	var err error
	for sent <= ring/size+1 {
		if err = c.Send(&transport.Message{Body: make([]byte, size)}); err != nil {
			break
		}
		sent++
	}
	require.ErrorIs(t, err, transport.ErrTimeout)
	assert.LessOrEqual(t, sent, ring/size, "messages the ring held")

	// The timed-out Send may have written part of its message, which
	// closes the socket; if it did not, a Send with no deadline waits,
	// and Close ends it.
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	done := make(chan error, 1)
	go func() { done <- c.Send(&transport.Message{Body: make([]byte, size)}) }()
	c.Close()
	select {
	case err := <-done:
		require.ErrorIs(t, err, transport.ErrClosed)
	case <-time.After(hangGuard):
		t.Fatal("Close did not end the waiting Send")
	}
}

// TestFlood: a peer sending as fast as it can to a slower reader: every
// message arrives, in order and whole, the sender waiting on the ring
// rather than this end holding more.
func TestFlood(t *testing.T) {
	skipUnlessLinux(t)
	const n = 10000
	tr := shm.New(shm.WithRingSize(64 << 10))
	defer tr.Close()
	c, s := pair(t, tr)
	sendErr := make(chan error, 1)
	go func() {
		body := make([]byte, 100)
		for i := range n {
			binary.LittleEndian.PutUint64(body, uint64(i))
			if err := c.Send(&transport.Message{Body: body[:8+i%92]}); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	var m transport.Message
	for i := range n {
		require.NoError(t, s.Recv(&m))
		require.Len(t, m.Body, 8+i%92)
		require.Equal(t, uint64(i), binary.LittleEndian.Uint64(m.Body), "message %d", i)
	}
	require.NoError(t, <-sendErr)
}
