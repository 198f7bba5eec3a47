package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/unixsock"
)

// hangGuard bounds what must end: generous, since the machine may be
// loaded; only a failing test waits that long.
const hangGuard = 20 * time.Second

// rawPeer is a dialler that met a listener as shm's own does, and then
// writes into the dialler's ring whatever a test wants: a hostile peer.
type rawPeer struct {
	c    *unixsock.Conn
	e    *ends
	ring *ring // the ring it writes, the listener reads
}

// hostile listens with shm (frame limit max, the smallest ring) and meets
// a rawPeer; it returns both ends, closed when t ends.
func hostile(t *testing.T, max int) (*rawPeer, transport.Socket) {
	t.Helper()
	dir, err := os.MkdirTemp("", "zd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	tr := New(WithMaxFrameSize(max))
	l, err := tr.Listen("unix:" + filepath.Join(dir, "h.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	nc, err := unixsock.Dial(context.Background(), (&net.Dialer{}).DialContext, filepath.Join(dir, "h.sock"))
	require.NoError(t, err)
	c := nc.(*unixsock.Conn)
	e, err := meetDial(c, minRingSize)
	require.NoError(t, err)
	p := &rawPeer{c: c, e: e, ring: newRing(e.mem, minRingSize)}
	t.Cleanup(p.close)
	s, err := l.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return p, s
}

func (p *rawPeer) close() {
	p.c.Close()
	p.e.release()
}

// write puts b at the ring's head, publishes it, and wakes the reader.
func (p *rawPeer) write(b []byte) {
	h := p.ring.head.Load()
	p.ring.put(h, b)
	p.setHead(h + uint64(len(b)))
}

// setHead stores any head, and wakes the reader.
func (p *rawPeer) setHead(h uint64) {
	p.ring.head.Store(h)
	unix.Write(p.e.peerData, one[:])
}

// recvWithin runs s.Recv, bounded by the hang guard.
func recvWithin(t *testing.T, s transport.Socket) (transport.Message, error) {
	t.Helper()
	type result struct {
		m   transport.Message
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var m transport.Message
		err := s.Recv(&m)
		ch <- result{m, err}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(hangGuard):
		t.Fatal("Recv did not return")
		return transport.Message{}, nil
	}
}

func prefix(hl, bl uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, hl)
	return binary.LittleEndian.AppendUint32(b, bl)
}

// TestHostileRing: a peer that writes into the ring what shm's never
// would makes Recv fail with an error that says so, and closes the
// socket; it never panics, reads out of bounds, or allocates what the
// peer announced.
func TestHostileRing(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(p *rawPeer)
		want  error
		words string
	}{
		{"lengths over the limit", func(p *rawPeer) { p.write(prefix(0xffffffff, 0xffffffff)) },
			transport.ErrFrameTooLarge, "peer announced 8589934590 bytes, limit 4096"},
		{"a head past the ring's size", func(p *rawPeer) { p.setHead(1 << 40) },
			transport.ErrProtocol, "shared ring's head is 1099511627776"},
		{"a head behind the tail", func(p *rawPeer) { p.setHead(^uint64(0)) },
			transport.ErrProtocol, "shared ring's head is 18446744073709551615"},
		{"a bad header field", func(p *rawPeer) { p.write(append(prefix(2, 0), 0x7f, 'k')) },
			transport.ErrProtocol, "bad header field length"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, s := hostile(t, 4096)
			c.write(p)
			_, err := recvWithin(t, s)
			require.ErrorIs(t, err, c.want)
			assert.Contains(t, err.Error(), c.words)
			_, again := recvWithin(t, s)
			assert.Equal(t, err, again, "a later Recv returns the cause")
			require.Eventually(t, func() bool {
				return errors.Is(s.Send(&transport.Message{Body: []byte("x")}), transport.ErrClosed)
			}, hangGuard, time.Millisecond, "the socket is closed")
		})
	}
}

// TestHostileScribbler: a peer that writes random bytes and random heads
// into the ring while this end reads it: every Recv returns a message
// within the limit or an error, and once the peer goes, Recv ends.
func TestHostileScribbler(t *testing.T) {
	const max = 4096
	p, s := hostile(t, max)
	stop := make(chan struct{})
	scribbled := make(chan struct{})
	go func() {
		defer close(scribbled)
		rng := rand.New(rand.NewPCG(1, 2))
		junk := make([]byte, 512)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for j := range junk {
				junk[j] = byte(rng.Uint32())
			}
			off := rng.Uint64N(minRingSize)
			p.ring.put(off, junk[:rng.IntN(len(junk))])
			h := p.ring.head.Load()
			switch rng.IntN(4) {
			case 0:
				p.setHead(rng.Uint64())
			default:
				p.setHead(h + rng.Uint64N(64))
			}
		}
	}()
	var m transport.Message
	for range 1000 {
		err := s.Recv(&m)
		if err != nil {
			break
		}
		size := len(m.Body)
		for k, v := range m.Header {
			size += len(k) + len(v)
		}
		require.LessOrEqual(t, size, max)
	}
	close(stop)
	<-scribbled
	p.close()
	_, err := recvWithin(t, s)
	require.Error(t, err)
}

// TestHostileWakes: a peer that wakes this end again and again with
// nothing written: Recv goes on waiting, and its deadline ends it.
func TestHostileWakes(t *testing.T) {
	p, s := hostile(t, 4096)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	stop := make(chan struct{})
	woke := make(chan struct{})
	go func() {
		defer close(woke)
		for {
			select {
			case <-stop:
				return
			default:
				unix.Write(p.e.peerData, one[:])
			}
		}
	}()
	_, err := recvWithin(t, s)
	close(stop)
	<-woke
	require.ErrorIs(t, err, transport.ErrTimeout)
	require.NoError(t, s.SetReadDeadline(time.Time{}))
	p.write(append(prefix(0, 2), "ok"...))
	m, err := recvWithin(t, s)
	require.NoError(t, err, "the socket is usable once the deadline is cleared")
	assert.Equal(t, "ok", string(m.Body))
}

// TestHostileMeetings: a dialler whose offer is not what shm's sends is
// refused, and told why; the listener serves on.
func TestHostileMeetings(t *testing.T) {
	dir, err := os.MkdirTemp("", "zd")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "m.sock")
	tr := New()
	l, err := tr.Listen("unix:" + path)
	require.NoError(t, err)
	defer l.Close()

	offer := func(t *testing.T, ringSize int, fds ...int) error {
		nc, err := unixsock.Dial(context.Background(), (&net.Dialer{}).DialContext, path)
		require.NoError(t, err)
		c := nc.(*unixsock.Conn)
		defer c.Close()
		c.SetDeadline(time.Now().Add(hangGuard))
		var msg [helloLen]byte
		copy(msg[:], hello)
		binary.LittleEndian.PutUint32(msg[8:], uint32(ringSize))
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		_, _, err = c.WriteMsgUnix(msg[:], oob, nil)
		require.NoError(t, err)
		got, err := readMsg(c, msg[:], 2, true)
		closeFDs(got...)
		if err == nil && string(msg[:8]) == noReply {
			return refusal(c, msg[:])
		}
		if err == nil {
			return errors.New("accepted")
		}
		return err
	}
	memfd := func(t *testing.T, size int, sealed bool) int {
		fd, err := unix.MemfdCreate("hostile", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		require.NoError(t, unix.Ftruncate(fd, int64(size)))
		if sealed {
			_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals)
			require.NoError(t, err)
		}
		return fd
	}
	evt := func(t *testing.T) int { // a wake socket
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		t.Cleanup(func() { closeFDs(fds[:]...) })
		return fds[1]
	}
	dgram := func(t *testing.T) int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		t.Cleanup(func() { closeFDs(fds[:]...) })
		return fds[1]
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()

	t.Run("no descriptors", func(t *testing.T) {
		err := offer(t, minRingSize)
		assert.ErrorIs(t, err, io.EOF, "the listener hangs up: %v", err)
	})
	t.Run("a ring size out of bounds", func(t *testing.T) {
		err := offer(t, 1<<30, memfd(t, mapBytes(minRingSize), true), evt(t), evt(t))
		assert.ErrorContains(t, err, "the listener refused the connection: ring size 1073741824")
	})
	t.Run("memory smaller than the rings", func(t *testing.T) {
		err := offer(t, minRingSize, memfd(t, 4096, true), evt(t), evt(t))
		assert.ErrorContains(t, err, "is not a file of")
	})
	t.Run("memory whose size is not sealed", func(t *testing.T) {
		err := offer(t, minRingSize, memfd(t, mapBytes(minRingSize), false), evt(t), evt(t))
		assert.ErrorContains(t, err, "size is not sealed")
	})
	t.Run("a pipe for a wake socket", func(t *testing.T) {
		err := offer(t, minRingSize, memfd(t, mapBytes(minRingSize), true), evt(t), int(w.Fd()))
		assert.ErrorContains(t, err, "not a socket where a wake socket was due")
	})
	t.Run("a datagram socket for a wake socket", func(t *testing.T) {
		err := offer(t, minRingSize, memfd(t, mapBytes(minRingSize), true), dgram(t), evt(t))
		assert.ErrorContains(t, err, "a socket of domain 1 and type 2 where a wake socket (a unix stream socket) was due")
	})
	t.Run("the listener serves on", func(t *testing.T) {
		err := offer(t, minRingSize, memfd(t, mapBytes(minRingSize), true), evt(t), evt(t))
		assert.EqualError(t, err, "accepted")
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		c, err := tr.Dial(ctx, "unix:"+path)
		require.NoError(t, err)
		c.Close()
	})
}
