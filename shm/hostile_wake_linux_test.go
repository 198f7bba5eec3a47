package shm

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
)

// The wake-ups' descriptors are passed to the peer: these tests are a
// peer that changes what it holds of them (their flags, their buffers),
// and an end that must not wait on it past its deadlines or its peer's
// going.

// stuckGuard is how long a call that must end may take before the test
// fails rather than hangs; only a failing test waits that long.
const stuckGuard = 3 * time.Second

// within runs f, and fails the test if it has not returned within
// stuckGuard.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(stuckGuard):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

// fill writes to fd until it would block: the buffer behind it is full,
// and it is left blocking.
func fill(t *testing.T, fd int) {
	t.Helper()
	require.NoError(t, unix.SetNonblock(fd, true))
	b := []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for {
		_, err := unix.Write(fd, b)
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		require.NoError(t, err)
	}
	require.NoError(t, unix.SetNonblock(fd, false))
}

// TestHostileWakeBlocking: the peer makes blocking what it holds of this
// end's data wake-up: Recv ends at its deadline, and Close returns.
func TestHostileWakeBlocking(t *testing.T) {
	p, s := hostile(t, 4096)
	require.NoError(t, unix.SetNonblock(p.e.peerData, false))
	require.NoError(t, s.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	err := within(t, "Recv", func() error { return s.Recv(&transport.Message{}) })
	require.ErrorIs(t, err, transport.ErrTimeout)
	require.NoError(t, within(t, "Close", s.Close))
}

// TestHostileWakeFull: the peer makes the descriptor this end wakes it
// with blocking, fills what is behind it, and says its reader sleeps:
// Send does not wait on the wake-up, and Close returns.
func TestHostileWakeFull(t *testing.T) {
	p, s := hostile(t, 4096)
	fd := peerWakeFD(p)
	fill(t, fd)
	newRing(p.e.mem[ringBytes(minRingSize):], minRingSize).readerParked.Store(1)
	require.NoError(t, s.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	err := within(t, "Send", func() error { return s.Send(&transport.Message{Body: []byte("x")}) })
	require.NoError(t, err)
	require.NoError(t, within(t, "Close", s.Close))
}

// TestHostileWakeFilledAndGone: the peer fills this end's data wake-up
// and goes while a Send waits for room: the Send learns of it.
func TestHostileWakeFilledAndGone(t *testing.T) {
	p, s := hostile(t, 1<<20)
	sent := make(chan error, 1)
	go func() { sent <- s.Send(&transport.Message{Body: make([]byte, 2*minRingSize)}) }()
	theirs := newRing(p.e.mem[ringBytes(minRingSize):], minRingSize)
	require.Eventually(t, func() bool { return theirs.writerParked.Load() == 1 }, hangGuard, time.Millisecond,
		"the Send sleeps for room")
	fill(t, p.e.peerData)
	p.c.Close()
	select {
	case err := <-sent:
		require.ErrorIs(t, err, errGone)
	case <-time.After(stuckGuard):
		t.Fatal("Send did not learn that the peer went")
	}
}

// peerWakeFD is the descriptor the peer holds of what this end writes to
// wake it: its copy of its data wake socket's passed end.
func peerWakeFD(p *rawPeer) int { return p.e.selfData }
