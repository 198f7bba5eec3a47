package frame

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// timedPair returns a Socket with the given frame timeout over one end of
// a pipe, and the raw other end.
func timedPair(t *testing.T, frameTimeout time.Duration) (*Socket, net.Conn) {
	a, b := net.Pipe()
	s := NewSocket(a, 1<<20).WithFrameTimeout(frameTimeout)
	t.Cleanup(func() { s.Close(); b.Close() })
	return s, b
}

// recvAsync runs Recv on its own goroutine.
func recvAsync(s *Socket) <-chan error {
	errc := make(chan error, 1)
	go func() {
		var m transport.Message
		errc <- s.Recv(&m)
	}()
	return errc
}

func waitErr(t *testing.T, errc <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(within):
		t.Fatalf("Recv still blocked after %v", within)
		return nil
	}
}

// The frame timeout's tests run in a synctest bubble: net.Pipe's deadlines
// are timers on the bubble's clock, so that a bound is checked exactly,
// and no loaded machine makes a trickle outlast the timeout it is within.

var frameHi = encode(&transport.Message{Header: map[string]string{"k": "v"}, Body: []byte("hi")})

// A peer that sends part of a frame and stops fails Recv once the frame
// timeout has passed since the frame's first byte, and the socket is
// closed: its stream is out of step.
func TestFrameTimeoutDropsHalfFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, peer := timedPair(t, 100*time.Millisecond)
		errc := recvAsync(s)
		start := time.Now()
		_, err := peer.Write(frameHi[:5])
		require.NoError(t, err)
		err = waitErr(t, errc, 5*time.Second)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "at the frame timeout")
		require.ErrorIs(t, err, transport.ErrTimeout)
		assert.Contains(t, err.Error(), "within the frame timeout (100ms)")
		var m transport.Message
		assert.ErrorIs(t, s.Recv(&m), transport.ErrClosed, "the socket was left open")
	})
}

// The frame timeout starts at a frame's first byte: a peer silent between
// frames is not bounded by it, and the socket still works.
func TestFrameTimeoutSparesSilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, peer := timedPair(t, 50*time.Millisecond)
		errc := recvAsync(s)
		select {
		case err := <-errc:
			t.Fatalf("Recv of a silent peer returned %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		_, err := peer.Write(frameHi)
		require.NoError(t, err)
		require.NoError(t, waitErr(t, errc, 5*time.Second))
	})
}

// A frame that trickles in within the timeout is read, and the user's
// deadline (none) is back in force afterwards; a user's deadline earlier
// than the frame timeout still ends the read, with the ordinary error.
func TestFrameTimeoutKeepsUserDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, peer := timedPair(t, 2*time.Second)
		errc := recvAsync(s)
		for _, b := range frameHi {
			_, err := peer.Write([]byte{b})
			require.NoError(t, err)
			time.Sleep(2 * time.Millisecond)
		}
		require.NoError(t, waitErr(t, errc, 5*time.Second))

		errc = recvAsync(s) // no user deadline: waits past the last frame's bound
		select {
		case err := <-errc:
			t.Fatalf("Recv returned %v: the frame's deadline outlived its frame", err)
		case <-time.After(3 * time.Second):
		}
		require.NoError(t, s.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
		err := waitErr(t, errc, 5*time.Second)
		require.ErrorIs(t, err, transport.ErrTimeout, "the user's deadline")
		require.NoError(t, s.SetReadDeadline(time.Time{}))

		errc = recvAsync(s)
		_, err = peer.Write(frameHi[:3])
		require.NoError(t, err)
		synctest.Wait() // the frame has begun: its bound is set, and Recv waits for the rest
		require.NoError(t, s.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		err = waitErr(t, errc, 5*time.Second)
		require.ErrorIs(t, err, transport.ErrTimeout)
		assert.NotContains(t, err.Error(), "frame timeout", "the user's deadline ended it")
		assert.Contains(t, err.Error(), "part way through a frame")
	})
}

// A frame already wholly in the read buffer is read without touching the
// connection's deadline: small messages pay nothing for the bound.
func TestFrameTimeoutSkipsBufferedFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sets int
		a, b := net.Pipe()
		defer b.Close()
		s := NewSocket(a, 1<<20).WithFrameTimeout(time.Second)
		defer s.Close()
		s.frame.set = func(t time.Time) error { sets++; return a.SetReadDeadline(t) }
		go func() { _, _ = b.Write(append(append([]byte{}, frameHi...), frameHi...)) }()
		var m transport.Message
		require.NoError(t, s.Recv(&m)) // the pipe delivers it in one read
		require.NoError(t, s.Recv(&m))
		assert.Zero(t, sets, "deadline changes for buffered frames")

		go func() {
			_, _ = b.Write(frameHi[:4])
			time.Sleep(10 * time.Millisecond)
			_, _ = b.Write(frameHi[4:])
		}()
		require.NoError(t, s.Recv(&m))
		assert.Equal(t, 2, sets, "a frame that arrives in parts sets the bound and restores the user's deadline")
	})
}
