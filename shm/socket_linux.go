package shm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/dialled"
	"github.com/zerodial/transport/internal/unixsock"
)

// socket is one end of a shared-memory connection: a pipe over the two
// rings of its mapping, and the unix socket the ends met over, kept open
// for the connection's life so that each end learns at once when the
// other has gone (its process too: the kernel closes its socket).
type socket struct {
	pipe
	e    *ends
	conn *unixsock.Conn

	sendMu sync.Mutex // held by Send: one writer of out at a time
	recvMu sync.Mutex // held by Recv and WaitFrame: one reader of in

	closed   atomic.Bool
	cause    atomic.Pointer[error] // what closed the socket, when a failure did
	gone     atomic.Bool           // the peer's socket ended
	rd, wd   atomic.Int64          // the deadlines, in Unix nanoseconds; 0 for none
	watched  chan struct{}
	shutOnce sync.Once
	freeOnce sync.Once

	wakeR, wakeW [64]byte // sleep's read buffers, fields so as not to escape

	dialledBy *dialled.Set // the Transport's that dialled this end; nil for an accepted one
}

var (
	_ transport.FrameWaiter      = (*socket)(nil)
	_ transport.PeerCredReporter = (*socket)(nil)
)

// newSocket makes an end over what the meeting gave. dialler says which
// ring it writes: the dialler the first, the listener the second.
func newSocket(c *unixsock.Conn, e *ends, ringSize, max int, dialler bool) *socket {
	a := newRing(e.mem, ringSize)
	b := newRing(e.mem[ringBytes(ringSize):], ringSize)
	s := &socket{e: e, conn: c, watched: make(chan struct{})}
	s.pipe = pipe{out: a, in: b, p: s, max: max}
	if !dialler {
		s.out, s.in = b, a
	}
	go s.watch()
	return s
}

// watch waits for the peer's end of the unix socket to end (its Close,
// its process's end), or for this end's Close. The peer sends nothing over
// it after the meeting; a byte that comes is a broken peer, taken as gone.
func (s *socket) watch() {
	defer close(s.watched)
	var b [1]byte
	s.conn.Read(b[:])
	s.gone.Store(true)
	s.wakeSelf()
}

var errPeerClosed = fmt.Errorf("shm: send: %w: %w", errGone, io.ErrClosedPipe)

func (s *socket) Send(m *transport.Message) error {
	s.sendMu.Lock()
	if s.closed.Load() { // checked under the lock: Close unmaps once it holds it
		s.sendMu.Unlock()
		return transport.ErrClosed
	}
	if s.gone.Load() {
		s.sendMu.Unlock()
		return errPeerClosed
	}
	if err := s.check(false); err != nil {
		s.sendMu.Unlock()
		return err
	}
	err := s.writeFrame(m)
	s.sendMu.Unlock()
	return s.failed(err, errPeerClosed)
}

func (s *socket) Recv(m *transport.Message) error {
	s.recvMu.Lock()
	if s.closed.Load() || s.cause.Load() != nil {
		s.recvMu.Unlock()
		return s.closedErr()
	}
	err := s.readFrame(m)
	s.recvMu.Unlock()
	return s.failed(err, io.EOF)
}

// WaitFrame waits until a message has begun to arrive, taking none of it
// (transport.FrameWaiter).
func (s *socket) WaitFrame() error {
	s.recvMu.Lock()
	if s.closed.Load() || s.cause.Load() != nil {
		s.recvMu.Unlock()
		return s.closedErr()
	}
	err := s.waitFrame()
	s.recvMu.Unlock()
	return s.failed(err, io.EOF)
}

// failed maps an error of the pipe to the Socket's: the peer's going to
// gone (Recv's io.EOF, Send's errPeerClosed), and an error that left a ring out of step — part of a message, or a peer
// that wrote out of turn — closes the socket.
func (s *socket) failed(err error, gone error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errGone) {
		// Part way through a message or not, the peer is not there to
		// read the rest: nothing is out of step for this end's reader,
		// which reads what came before and then io.EOF.
		return gone
	}
	var mf *errMidFrame
	if errors.As(err, &mf) || errors.Is(err, transport.ErrProtocol) {
		if mf != nil {
			err = mf.err
		}
		cause := err // its own variable, so that only this path allocates it
		if s.cause.CompareAndSwap(nil, &cause) {
			// Shut at once, as tcp's Socket closes, and every later Recv
			// returns the cause (closedErr); freed on a goroutine of its
			// own, since free waits for the locks and the watcher: this
			// caller returns the cause without that wait, so that a
			// dispatch connection records it rather than the ErrClosed a
			// Send meets meanwhile.
			s.shut()
			go s.Close()
		}
	}
	return err
}

// closedErr is the error of a Recv or WaitFrame on a closed socket: what
// closed it, when a failure did (a message over the limit, a peer that
// wrote out of turn), so that every reader learns the cause, whichever
// comes first, as over tcp; transport.ErrClosed after Close.
func (s *socket) closedErr() error {
	if c := s.cause.Load(); c != nil {
		return *c
	}
	return transport.ErrClosed
}

// Close closes the socket: its own waits end at once (the wake sockets
// they read close), the peer's on its watcher's news (the unix socket closes); once
// no Send or Recv of this end is in the rings, the memory is unmapped and
// the descriptors closed. The memfd has no name: the memory is the
// kernel's to free when the peer has unmapped it too.
func (s *socket) Close() error {
	s.shut()
	s.freeOnce.Do(s.free)
	return nil
}

// shut is Close's first part, which does not wait: Send and Recv fail
// from now on, waits end, and the peer learns of it.
func (s *socket) shut() {
	s.shutOnce.Do(func() {
		s.closed.Store(true)
		s.e.data.Close()
		s.e.room.Close()
		s.conn.Close()
		if s.dialledBy != nil {
			s.dialledBy.Remove(s)
		}
	})
}

// free is Close's second part: it waits until the watcher has gone and
// no Send or Recv is in the rings, and frees the memory and descriptors.
func (s *socket) free() {
	<-s.watched
	s.sendMu.Lock()
	s.recvMu.Lock()
	unix.Munmap(s.e.mem)
	closeFDs(s.e.selfData, s.e.selfRoom, s.e.peerData, s.e.peerRoom)
	s.recvMu.Unlock()
	s.sendMu.Unlock()
}

func (s *socket) LocalAddr() net.Addr  { return s.conn.LocalAddr() }
func (s *socket) RemoteAddr() net.Addr { return s.conn.RemoteAddr() }

// PeerCred returns the credentials of the peer's process, as the kernel
// reported them for the unix socket (transport.PeerCredReporter).
func (s *socket) PeerCred() (transport.PeerCred, bool) { return s.conn.PeerCred() }

func (s *socket) SetDeadline(t time.Time) error {
	s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

func (s *socket) SetReadDeadline(t time.Time) error {
	s.rd.Store(unixNano(t))
	s.e.data.SetReadDeadline(t) // fails only once closed, which Recv reports
	return nil
}

func (s *socket) SetWriteDeadline(t time.Time) error {
	s.wd.Store(unixNano(t))
	s.e.room.SetReadDeadline(t)
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
