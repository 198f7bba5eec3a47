package mux

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/options"
)

// ErrSessionClosed is returned (wrapped) by Send and Recv on a stream whose
// session ended under it: the connection was lost, keepalive failed, or the
// Transport or Listener was closed. Unlike io.EOF it means the peer did not
// close the stream; redial to continue. It matches io.ErrUnexpectedEOF.
// When this end closed the session — Transport.Close, ClientConn.Close —
// the stream's error matches transport.ErrClosed too, as a tcp socket's
// does once its Transport is closed, and says so ("mux: session closed:
// its Transport was closed").
// When an error of the connection ended the session — a reset, a TLS alert,
// the peer hanging up — the stream's error matches ErrSessionClosed, says
// why ("mux: session closed: read tcp ...: connection reset by peer") and
// unwraps to that error.
// ClientConn.Dial, which cannot redial, and the Accept of NewServerConn's
// Listener return it too once their one session has ended, and so does
// Transport.Dial when the new session it connected, too, died as the stream
// was opened.
var ErrSessionClosed error = sessionClosedError{}

type sessionClosedError struct{}

func (sessionClosedError) Error() string { return "mux: session closed" }

// Is lets errors.Is(err, io.ErrUnexpectedEOF) hold: the stream ended without
// the peer ending it.
func (sessionClosedError) Is(target error) bool { return target == io.ErrUnexpectedEOF }

// sessionLost is ErrSessionClosed with the connection error that ended the
// session: a reset, a TLS alert, the peer hanging up (io.EOF).
type sessionLost struct{ cause error }

func (e *sessionLost) Error() string { return "mux: session closed: " + e.cause.Error() }

// Is makes it match ErrSessionClosed, and so io.ErrUnexpectedEOF.
func (e *sessionLost) Is(target error) bool {
	return target == ErrSessionClosed || target == io.ErrUnexpectedEOF
}

// Unwrap returns the cause.
func (e *sessionLost) Unwrap() error { return e.cause }

// errClosedHere is the cause a session is marked dead with when this end
// closes it on purpose (clientSession.closeHere): Transport.Close.
var errClosedHere = errors.New("mux: closed here")

// sessionClosedHere is the error of a stream whose session this end
// closed (errClosedHere). It matches ErrSessionClosed, and so
// io.ErrUnexpectedEOF, and transport.ErrClosed, which it unwraps to: the
// stream is closed here, as a tcp socket is by tcp's Transport.Close.
type sessionClosedHere struct{}

func (sessionClosedHere) Error() string { return "mux: session closed: its Transport was closed" }

func (sessionClosedHere) Is(target error) bool {
	return target == ErrSessionClosed || target == io.ErrUnexpectedEOF
}

func (sessionClosedHere) Unwrap() error { return transport.ErrClosed }

// sessionClosed returns the error of a stream whose session ended because
// of cause, nil for a session closed.
func sessionClosed(cause error) error {
	switch {
	case cause == errClosedHere:
		return sessionClosedHere{}
	case cause == nil, errors.Is(cause, net.ErrClosed):
		// Closed, here: the read that failed was on a connection this
		// end closed, which says nothing more.
		return ErrSessionClosed
	case cause == io.EOF:
		// Not io.EOF itself, which would tell errors.Is that the peer
		// closed the stream.
		cause = peerHungUp{}
	}
	return &sessionLost{cause}
}

// peerHungUp is the cause of a session whose connection the peer closed.
type peerHungUp struct{}

func (peerHungUp) Error() string { return "the peer closed the connection" }

// Is lets errors.Is(err, io.ErrUnexpectedEOF) hold, as for ErrSessionClosed.
func (peerHungUp) Is(target error) bool { return target == io.ErrUnexpectedEOF }

var (
	// errPeerClosed fails a write to a stream the peer has closed. It wraps
	// io.ErrClosedPipe, as a write to a TCP connection the peer closed
	// fails with EPIPE.
	errPeerClosed = fmt.Errorf("mux: stream closed by peer: %w", io.ErrClosedPipe)
	// errReset is a stream the peer reset: it overflowed the peer's accept
	// backlog, or the peer gave up waiting for this end to close.
	errReset = fmt.Errorf("mux: stream reset by peer: %w", yamux.ErrConnectionReset)
)

// longAgo is a deadline in the past, used to wake a blocked yamux call.
var longAgo = time.Unix(1, 0)

// owner is the session bookkeeping told when a stream is closed.
type owner interface {
	streamClosed()
}

// streamConn is the net.Conn a frame.Socket runs over: a yamux stream made
// to behave as the Socket contract needs.
//
//   - Close ends the stream for both directions: a blocked Read returns at
//     once (yamux's Close is a half-close that leaves reads open).
//   - A write to a stream the peer has closed fails (yamux would accept it,
//     or block forever on a window the peer no longer opens).
//   - A write deadline that has passed fails the write before anything is
//     sent (yamux checks it only when the window is full).
//   - io.EOF is reported only when the peer closed; a lost session is
//     ErrSessionClosed.
//   - Calls blocked when the session dies return at once, and later ones do
//     not wait (yamux v0.1.2 would spin in them; see tracker.markDead).
type streamConn struct {
	st    *yamux.Stream
	owner owner
	t     *tracker // its session's

	closed  atomic.Bool
	peerFIN atomic.Bool
	// dead is set when the session's connection has failed or is closing;
	// deadErr, set before it, is the streams' error from then on.
	dead    atomic.Bool
	deadErr error
	// wdl is the caller's write deadline in Unix nanoseconds, 0 for none.
	wdl atomic.Int64

	// mu orders deadline changes against Close, the peer's close and the
	// session's death, so a caller's deadline never undoes the past
	// deadline that wakes a reader or writer.
	mu   sync.Mutex
	once sync.Once

	// recvd counts bytes read since the receive buffer was last released.
	recvd int
	// written counts the bytes Write has reported written. Calls to Write
	// are serial (frame.Socket's write lock), which the count relies on.
	written uint64
	// sent counts the payload bytes of the stream's data frames that the
	// connection took (tracker.wrote); the tracker's wmu.
	sent uint64
}

// shrinkAfter is how many bytes a stream reads before, on draining its
// receive buffer, it hands the buffer back. yamux keeps a stream's buffer
// at its largest size for the stream's life, so an idle stream that once
// moved a burst would hold up to twice its window; a stream that moves
// little keeps its small buffer and allocates nothing per message. Large
// enough that a stream moving megabyte messages releases its buffer once per
// megabyte or so, not once per window, which made yamux grow it again from
// nothing several times per message.
const shrinkAfter = 1 << 20

func newStreamConn(st *yamux.Stream, o owner, t *tracker) *streamConn {
	c := &streamConn{st: st, owner: o, t: t}
	t.attach(st.StreamID(), c)
	return c
}

// peerClosed is called by the tracker when the peer's FIN goes by. A past
// write deadline wakes a writer blocked on the window; Write then reports
// errPeerClosed.
func (c *streamConn) peerClosed() {
	c.mu.Lock()
	c.peerFIN.Store(true)
	c.st.SetWriteDeadline(longAgo)
	c.mu.Unlock()
}

// sessionDied is called by the tracker when the session's connection fails
// or is being closed. Past deadlines end the calls blocked in yamux, and
// keep later ones from waiting: a deadline is the one way out of yamux's
// wait that does not depend on the stream's state, which yamux updates
// late (tracker.markDead). Data already received stays readable.
func (c *streamConn) sessionDied(cause error) {
	c.mu.Lock()
	c.deadErr = sessionClosed(cause)
	c.dead.Store(true)
	c.st.SetReadDeadline(longAgo)
	c.st.SetWriteDeadline(longAgo)
	c.mu.Unlock()
}

func (c *streamConn) Read(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	n, err := c.st.Read(b)
	if n > 0 {
		c.recvd += n
		if n < len(b) && c.recvd >= shrinkAfter {
			c.st.Shrink() // only if nothing is buffered
			c.recvd = 0
		}
	}
	if err != nil {
		err = c.readErr(err)
	}
	return n, err
}

func (c *streamConn) readErr(err error) error {
	switch {
	case c.closed.Load():
		return net.ErrClosed
	case err == io.EOF && c.peerFIN.Load():
		return io.EOF
	case c.dead.Load():
		// Also the timeout sessionDied set to end the read.
		return c.deadErr
	case err == io.EOF:
		return ErrSessionClosed
	case errors.Is(err, yamux.ErrConnectionReset):
		return errReset
	case errors.Is(err, yamux.ErrSessionShutdown):
		return ErrSessionClosed
	}
	return err
}

// writeDeadlinePassed reports whether the caller's write deadline is set
// and past.
func (c *streamConn) writeDeadlinePassed() bool {
	dl := c.wdl.Load()
	return dl != 0 && time.Now().UnixNano() >= dl
}

func (c *streamConn) Write(b []byte) (int, error) {
	switch {
	case c.closed.Load():
		return 0, net.ErrClosed
	case c.peerFIN.Load():
		return 0, errPeerClosed
	case c.dead.Load():
		return 0, c.deadErr
	case c.writeDeadlinePassed():
		return 0, os.ErrDeadlineExceeded
	}
	n, err := c.st.Write(b)
	if err != nil && (c.dead.Load() || errors.Is(err, yamux.ErrSessionShutdown)) {
		n = c.wentOut(n, len(b))
		if n == len(b) {
			err = nil
		}
	}
	c.written += uint64(n)
	if err != nil {
		err = c.writeErr(err)
	}
	return n, err
}

// wentOut returns how many of the size bytes of a Write that yamux failed
// with n written, its session having shut down, the connection took in
// fact.
//
// yamux can fail a write whose frame went out: the writer waits for the
// send loop's result and for the session's shutdown in one select, and when
// the peer answers the frame by closing the connection (a server that
// shuts down once the last frame of a stream is in, say), both are ready
// and either may win. A Send reported failed that the peer received and
// acted on misleads the caller (the frame is not lost, and the end of the
// stream follows it), so the tracker's count of what went out decides.
func (c *streamConn) wentOut(n, size int) int {
	if sent := c.t.settledSent(c); sent > c.written {
		n = max(n, int(min(sent-c.written, uint64(size))))
	}
	return n
}

func (c *streamConn) writeErr(err error) error {
	switch {
	case c.closed.Load():
		return net.ErrClosed
	case c.peerFIN.Load():
		// Also when yamux reports the timeout peerClosed set to wake it.
		return errPeerClosed
	case c.dead.Load():
		// Also the timeout sessionDied set.
		return c.deadErr
	case errors.Is(err, yamux.ErrConnectionReset):
		return errReset
	case errors.Is(err, yamux.ErrSessionShutdown), errors.Is(err, yamux.ErrStreamClosed):
		// Not closed here nor by the peer: the session went away.
		return ErrSessionClosed
	}
	return err
}

// Close ends the stream: blocked calls return, the peer's Recv sees io.EOF
// after what was sent, and its Send fails.
func (c *streamConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed.Store(true)
		// yamux's Close leaves reads open and wakes a blocked writer only
		// after the FIN is written; past deadlines wake both now.
		c.st.SetReadDeadline(longAgo)
		c.st.SetWriteDeadline(longAgo)
		c.mu.Unlock()
		c.st.Close()
		c.owner.streamClosed()
	})
	return nil
}

func (c *streamConn) LocalAddr() net.Addr  { return c.st.LocalAddr() }
func (c *streamConn) RemoteAddr() net.Addr { return c.st.RemoteAddr() }

func (c *streamConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *streamConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed.Load() && !c.dead.Load() {
		c.st.SetReadDeadline(t)
	}
	return nil
}

func (c *streamConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.IsZero() {
		c.wdl.Store(0)
	} else {
		c.wdl.Store(t.UnixNano())
	}
	if !c.closed.Load() && !c.peerFIN.Load() && !c.dead.Load() {
		c.st.SetWriteDeadline(t)
	}
	return nil
}

// socket is the transport.Socket of one stream: a frame.Socket over a
// streamConn.
type socket struct {
	*frame.Socket
	c *streamConn
}

var (
	_ transport.Socket           = (*socket)(nil)
	_ transport.PeerCredReporter = (*socket)(nil)
)

func newSocket(c *streamConn, o options.Common) *socket {
	return &socket{Socket: frame.NewSocket(c, o.MaxFrameSize).WithFrameTimeout(o.FrameTimeout).WithCompression(c.t.comp), c: c}
}

// TLS reports the TLS state of the session's connection
// (transport.TLSReporter): every stream of a session shares it.
func (s *socket) TLS() (tls.ConnectionState, bool) {
	if tc := s.c.t.tls; tc != nil {
		return tc.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}

// PeerCred returns the credentials of the peer of the session's
// connection, when it is a unix socket and the system reports them
// (transport.PeerCredReporter): every stream of a session shares them.
func (s *socket) PeerCred() (transport.PeerCred, bool) { return s.c.t.cred, s.c.t.credOK }

// Send sends m. A write deadline already past fails it with ErrTimeout and
// leaves the socket usable: frame.Socket would close the socket on any
// failed write over a connection that is not a raw TCP one, since it cannot
// tell a write that sent nothing from one that sent part of a frame.
func (s *socket) Send(m *transport.Message) error {
	if !s.c.closed.Load() && s.c.writeDeadlinePassed() {
		return transport.ErrTimeout
	}
	return s.Socket.Send(m)
}
