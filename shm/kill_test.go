package shm_test

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/shm"
)

// hangGuard bounds what must end: generous, since the machine may be
// loaded; only a failing test waits that long.
const hangGuard = 20 * time.Second

// TestPeerKilledMidCall: a peer process killed (SIGKILL) while this end
// waits on it — a Recv for the reply it will never send, a Send waiting
// for room in the ring it no longer reads — ends every wait with an error
// naming the cause, and once this end closes, it holds no descriptor and
// no mapping more than before: the memory is freed.
func TestPeerKilledMidCall(t *testing.T) {
	skipUnlessLinux(t)
	fds, maps := openFDs(t), shmMaps(t)

	c := startChild(t, "stall")
	tr := shm.New(shm.WithRingSize(64 << 10))
	s := dialChild(t, tr, c)
	require.NoError(t, s.Send(&transport.Message{Header: map[string]string{"call": "1"}, Body: []byte("request")}))
	require.Equal(t, "got", c.next(t), "the child has the request")
	assert.Equal(t, maps+1, shmMaps(t), "the connection's memory is mapped")

	recvErr := make(chan error, 1)
	go func() {
		var m transport.Message
		recvErr <- s.Recv(&m)
	}()
	sendErr := make(chan error, 1)
	go func() {
		body := make([]byte, 16<<10)
		for {
			// The child reads no more: past four of these, the ring is
			// full and Send waits.
			if err := s.Send(&transport.Message{Body: body}); err != nil {
				sendErr <- err
				return
			}
		}
	}()
	c.kill(t)

	select {
	case err := <-recvErr:
		assert.ErrorIs(t, err, io.EOF, "Recv ends as the peer's Close would end it")
	case <-time.After(hangGuard):
		t.Fatal("Recv still waits on a dead peer")
	}
	select {
	case err := <-sendErr:
		require.Error(t, err)
		assert.ErrorIs(t, err, io.ErrClosedPipe)
		assert.Contains(t, err.Error(), "the peer closed the connection, or its process ended")
	case <-time.After(hangGuard):
		t.Fatal("Send still waits on a dead peer")
	}
	require.NoError(t, s.Close())
	require.NoError(t, tr.Close())
	assert.Equal(t, fds, openFDs(t), "open descriptors after Close")
	assert.Equal(t, maps, shmMaps(t), "shared memory mappings after Close")
}

// TestPeerEcho: messages of every size, from empty to larger than the
// ring, cross to a child process and back whole; the peer's credentials
// are the child's.
func TestPeerEcho(t *testing.T) {
	skipUnlessLinux(t)
	c := startChild(t, "echo")
	tr := shm.New()
	defer tr.Close()
	s := dialChild(t, tr, c)
	defer s.Close()
	for _, n := range []int{0, 16, 64 << 10, 1 << 20, 3 << 20} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		require.NoError(t, s.Send(&transport.Message{Header: map[string]string{"n": strings.Repeat("x", n%17)}, Body: body}))
		var m transport.Message
		require.NoError(t, s.Recv(&m))
		require.True(t, bytes.Equal(body, m.Body), "%d bytes: got %d", n, len(m.Body))
		require.Equal(t, strings.Repeat("x", n%17), m.Header["n"])
	}
	cred, ok := s.(transport.PeerCredReporter).PeerCred()
	require.True(t, ok)
	assert.Equal(t, c.cmd.Process.Pid, cred.PID, "the peer's credentials are the child's")
	assert.Equal(t, os.Getuid(), cred.UID)
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// shmMaps counts this process's mappings of shm's memory.
func shmMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	return strings.Count(string(b), "memfd:zerodial-shm")
}
