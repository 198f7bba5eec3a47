package frame

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/unixsock"
)

// readBufferSize is the read buffer of one socket while its peer is
// sending (readBuf). Small messages are read in one system call; bodies
// larger than it are read straight into the Message.
const readBufferSize = 16 << 10

// copyLimit is the largest body copied into the write buffer. A larger one is
// written from the caller's slice (with writev on a TCP connection), which
// costs a second buffer but no copy.
const copyLimit = 32 << 10

// JoinedWriter is a connection that writes a frame's head and a large body
// best as one write of its own making, rather than as the two writes
// net.Buffers makes of them on anything but a TCP connection. A mux stream
// is one: each write is a yamux frame, and a head sent apart from its body
// costs a frame of its own and leaves the peer's receive buffer sized for
// the head, to be grown step by step as the body arrives. WriteJoined
// reports how many bytes of head and body, counted together, were written.
type JoinedWriter interface {
	WriteJoined(head, body []byte) (int, error)
}

// Socket is a transport.Socket of frames over a net.Conn: a TCP or TLS
// connection, or a yamux stream.
type Socket struct {
	conn   net.Conn
	max    int
	closed atomic.Bool
	once   sync.Once

	rmu sync.Mutex
	r   *Reader
	// frame bounds the rest of a frame once it has begun; nil when the
	// frame timeout is off.
	frame *frameDeadline

	wmu  sync.Mutex
	wbuf []byte
	// rawTCP is set when a write that wrote nothing can fail without
	// spoiling the stream; over TLS or yamux a failed write always closes.
	rawTCP bool
	// wdl is the write deadline last set (UnixNano, 0 for none), which
	// a write over TLS or yamux checks before it begins: the connection
	// would fail it for good, where a write that has not begun need not
	// spoil anything (transport.Socket: a Send past its deadline leaves
	// the Socket usable once the deadline is moved).
	wdl atomic.Int64
	// q orders and coalesces writes (SendAsync).
	q sendQueue
	// pack compresses large bodies; nil when the peer accepts no
	// compressed frame or compression is off.
	pack *packer
}

// NewSocket returns a Socket of frames over c, refusing frames larger than
// max bytes in either direction.
func NewSocket(c net.Conn, max int) *Socket {
	raw := unixsock.Raw(c)
	s := &Socket{
		conn:   c,
		max:    max,
		r:      &Reader{r: newReadBuf(c), max: max},
		rawTCP: raw,
	}
	s.q.init()
	s.q.handOn = func() { s.q.drain(s.writeQueued) }
	return s
}

// WithFrameTimeout bounds the rest of each frame: once its first byte has
// arrived, the rest must arrive within d, or Recv fails with
// transport.ErrTimeout and the socket is closed. Zero means no bound. It
// must be called before the first Recv; it returns s.
func (s *Socket) WithFrameTimeout(d time.Duration) *Socket {
	s.frame = nil
	if d > 0 {
		s.frame = &frameDeadline{timeout: d, set: s.conn.SetReadDeadline}
	}
	return s
}

// WithCompression sets what the socket does about compressed frames
// (WIRE.md, "Compression"): it compresses bodies of at least c.Min bytes,
// and reads compressed frames when c.Accept is set. It must be called
// before the first Send or Recv; it returns s.
func (s *Socket) WithCompression(c Compression) *Socket {
	s.pack = nil
	if c.Min > 0 {
		s.pack = &packer{min: c.Min}
	}
	s.r.flags = 0
	if c.Accept {
		s.r.flags = FlagS2
	}
	return s
}

// Conn returns the connection under the socket.
func (s *Socket) Conn() net.Conn { return s.conn }

// TLS reports the connection's TLS state when it is a *tls.Conn
// (transport.TLSReporter).
func (s *Socket) TLS() (tls.ConnectionState, bool) {
	if tc, ok := s.conn.(*tls.Conn); ok {
		return tc.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}

// Send writes m as one frame, and returns once it is written. When a
// write is under way, m waits in the queue and goes out with the frames
// queued beside it, in one write; a failure of that write closes the
// socket. Once maxQueued bytes wait there, Send first waits for the write
// to take them, so that a peer that stops reading cannot make the socket
// copy every waiting sender's frame.
func (s *Socket) Send(m *transport.Message) error {
	pk := s.pack.pack(m.Body, s.max)
	hl, err := s.admit(m)
	if err != nil {
		pk.release()
		return err
	}
	q := &s.q
	if err := q.room(); err != nil {
		q.mu.Unlock()
		pk.release()
		return err
	}
	if !q.claim() {
		s.enqueue(m.Header, hl, pk)
		// Copied: a sender waiting for its batch holds no compressed copy.
		pk.release()
		err := q.waitBatch(q.batch)
		q.mu.Unlock()
		return err
	}
	q.mu.Unlock()
	err = s.send(m.Header, hl, pk)
	pk.release()
	// What queued meanwhile goes now; if this write closed the socket, it
	// fails with it.
	q.drain(s.writeQueued)
	return err
}

// admit checks the socket and m before m is written or queued: it returns
// m's header length, with the queue's lock held, or why m cannot go — the
// failed write that closed the socket, if one did.
func (s *Socket) admit(m *transport.Message) (int, error) {
	if s.closed.Load() {
		if werr := s.sendFailure(); werr != nil {
			return 0, werr
		}
		return 0, transport.ErrClosed
	}
	if !s.rawTCP && s.writeDeadlinePassed() {
		return 0, transport.ErrTimeout
	}
	hl, err := Check(m, s.max)
	if err != nil {
		return 0, err
	}
	s.q.mu.Lock()
	if err := s.q.err; err != nil {
		s.q.mu.Unlock()
		return 0, err
	}
	return hl, nil
}

// SendAsync queues m as one frame and returns at once
// (transport.AsyncSender): it goes out with whatever else is queued when
// the write under way ends, on a goroutine started here if none is
// writing. It never waits for room (maxQueued): what its callers queue
// behind a blocked write is theirs to bound.
func (s *Socket) SendAsync(m *transport.Message) error {
	pk := s.pack.pack(m.Body, s.max)
	defer pk.release() // enqueue copies it
	hl, err := s.admit(m)
	if err != nil {
		return err
	}
	q := &s.q
	s.enqueue(m.Header, hl, pk)
	start := q.claim()
	q.mu.Unlock()
	if start {
		go q.drain(s.writeQueued)
	}
	return nil
}

// Queue copies m into the send queue as one frame (transport.BatchSender).
// flush reports that no write was under way: the caller is now the writer,
// and must call Flush, which writes m with whatever other senders queued
// meanwhile. Otherwise m goes out with the next batch of the write under
// way, and Queue returns at once — unless maxQueued bytes wait already,
// when it first waits for that write to take them.
//
// It serves BenchmarkParallel: callers that share a connection release
// their own lock once their request is queued, so that the requests of
// the next callers join the write in flight instead of each making one.
func (s *Socket) Queue(m *transport.Message) (flush bool, err error) {
	pk := s.pack.pack(m.Body, s.max)
	defer pk.release() // enqueue copies it
	hl, err := s.admit(m)
	if err != nil {
		return false, err
	}
	q := &s.q
	if err := q.room(); err != nil {
		q.mu.Unlock()
		return false, err
	}
	s.enqueue(m.Header, hl, pk)
	flush = q.claim()
	q.mu.Unlock()
	return flush, nil
}

// enqueue copies a frame of header h (hl bytes encoded) and body pk into
// the queue; q.mu is held.
func (s *Socket) enqueue(h map[string]string, hl int, pk packed) {
	q := &s.q
	n := len(q.buf)
	q.buf = append(appendHead(q.buf, h, hl, pk), pk.body...)
	q.unwritten.Add(int64(len(q.buf) - n))
}

// Unwritten reports how many bytes of frames the socket has taken from its
// senders and not yet written: those queued behind a write under way and
// the batch being written. A sender that did not wait for its write
// (Queue's, SendAsync's) no longer holds its message; the socket holds a
// copy until it is written, or dropped when a write fails. dispatch counts
// them in WithMaxBytesPerConn.
func (s *Socket) Unwritten() int64 { return s.q.unwritten.Load() }

// Flush writes the queue, batch after batch, until it is empty
// (transport.BatchSender). Only the caller Queue made the writer calls
// it. It returns the error of the first batch, which holds that caller's
// frame; a failed write closes the socket. When ctx ends while Flush is
// writing, the write is given InterruptGrace more (a write deadline that
// far ahead): a write the peer takes by then ends as any write does; one
// it does not is interrupted, the socket closed, since the batch may hold
// other senders' frames, and Flush returns an error matching
// transport.ErrTimeout.
func (s *Socket) Flush(ctx context.Context) error {
	q := &s.q
	if ctx.Done() == nil {
		return q.drain(s.writeQueued)
	}
	q.mu.Lock()
	me := q.writer
	q.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.busy && q.writer == me {
			q.interrupted = true
			q.interruptAt = interruptDeadline()
			_ = s.conn.SetWriteDeadline(earliest(s.userWriteDeadline(), q.interruptAt))
		}
	})
	// Once a batch is written and ctx has ended, what others queued
	// meanwhile is theirs: a goroutine writes it on, with no deadline of
	// this caller's, and the caller returns (TestFlushHandsOnOthersFrames).
	err := q.drainHandingOn(s.writeQueued, s.clearInterrupt, ctx)
	stop()
	return err
}

// clearInterrupt ends a Flush's interruption, with q.mu held: the
// connection's write deadline is the user's again. An interruption that
// came after the last write must not outlive its writer: the next one
// would fail.
func (s *Socket) clearInterrupt() {
	q := &s.q
	if q.interrupted {
		q.interrupted = false
		q.interruptAt = time.Time{}
		_ = s.conn.SetWriteDeadline(s.userWriteDeadline())
	}
}

// userWriteDeadline is the write deadline last set with SetWriteDeadline
// or SetDeadline (wdl).
func (s *Socket) userWriteDeadline() time.Time {
	switch dl := s.wdl.Load(); dl {
	case 0, math.MaxInt64:
		return time.Time{}
	case math.MinInt64:
		return time.Unix(1, 0)
	default:
		return time.Unix(0, dl)
	}
}

// WaitWritten waits until the frames the socket has taken — sent,
// queued by SendAsync or Queue — are written: no write is under way and
// none waits. It returns the error of a write that failed meanwhile (the
// socket is closed then), or ctx's error if ctx ends first; it closes
// nothing itself. A frame queued behind a write under way goes out only
// when that write ends, so an owner that means to close the socket once
// its last frames are out (dispatch's graceful Shutdown) waits here
// first: Close drops what is still queued.
func (s *Socket) WaitWritten(ctx context.Context) error {
	q := &s.q
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.busy && q.err == nil && ctx.Err() == nil {
		q.cond.Wait()
	}
	if q.err != nil {
		return q.err
	}
	if q.busy {
		return ctx.Err()
	}
	return nil
}

// writeQueued writes a batch of queued frames. Whatever its error, the
// socket is closed: the batch may hold frames that SendAsync accepted, and
// a stream missing one cannot go on.
func (s *Socket) writeQueued(b []byte) error {
	s.wmu.Lock()
	_, err := s.conn.Write(b)
	s.wmu.Unlock()
	if err == nil {
		return nil
	}
	mapped := s.mapErr("send", err)
	// Recorded before the socket closes, so that whoever then finds it
	// closed (Recv, a Send) is told why.
	s.q.mu.Lock()
	if s.q.err == nil {
		s.q.err = mapped
	}
	s.q.mu.Unlock()
	s.Close()
	return mapped
}

// send writes a frame of header h (hl bytes encoded) and body pk at once.
func (s *Socket) send(h map[string]string, hl int, pk packed) (err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	buf := appendHead(s.wbuf[:0], h, hl, pk)
	body := pk.body
	var n int64
	if len(body) <= copyLimit {
		buf = append(buf, body...)
		var w int
		w, err = s.conn.Write(buf)
		n = int64(w)
	} else if jw, ok := s.conn.(JoinedWriter); ok {
		var w int
		w, err = jw.WriteJoined(buf, body)
		n = int64(w)
	} else {
		bufs := net.Buffers{buf, body}
		n, err = bufs.WriteTo(s.conn)
	}
	if cap(buf) <= 2*copyLimit {
		s.wbuf = buf[:0]
	}
	if err == nil {
		return nil
	}
	mapped := s.mapErr("send", err)
	if n > 0 || !s.rawTCP || !isTimeout(err) {
		s.Close()
	}
	return mapped
}

// appendHead appends a frame's prefix and header block: header h, hl bytes
// encoded, and body pk as it goes on the wire.
func appendHead(b []byte, h map[string]string, hl int, pk packed) []byte {
	b = append(b, Version, pk.flags)
	b = binary.BigEndian.AppendUint32(b, uint32(hl))
	b = binary.BigEndian.AppendUint32(b, uint32(len(pk.body)))
	for k, v := range h {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// sendFailure is the error of the queued write that closed the socket.
func (s *Socket) sendFailure() error {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.q.err
}

// Recv reads the next frame into m.
func (s *Socket) Recv(m *transport.Message) error {
	if s.closed.Load() {
		if werr := s.sendFailure(); werr != nil {
			return werr
		}
		return transport.ErrClosed
	}
	s.rmu.Lock()
	expired, err := s.read(m)
	s.rmu.Unlock()
	if err == nil {
		return nil
	}
	if expired && IsMidFrame(err) && isTimeout(err) {
		s.Close()
		return fmt.Errorf("%w: the rest of a frame did not arrive within the frame timeout (%v); socket closed", transport.ErrTimeout, s.frame.timeout)
	}
	// A queued write that failed is the cause, even when the peer's end
	// of the stream arrived first: it records its error before it closes
	// the socket, so it is seen here whether or not the close has been.
	if werr := s.sendFailure(); werr != nil {
		return werr
	}
	if err == io.EOF && !s.closed.Load() {
		return io.EOF
	}
	mapped := s.mapErr("recv", err)
	if IsMidFrame(err) {
		s.Close()
	}
	return mapped
}

// Buffered reports whether the whole of the next frame has arrived and
// waits in the read buffer: a Recv would return it without waiting for
// the peer. It never waits: while a Recv is under way it reports false.
// A dispatch Server's reader asks it to know that another request is
// there already, and holds back the write of the reply it has just
// queued so that the next one joins it (BenchmarkParallel).
func (s *Socket) Buffered() bool {
	if !s.rmu.TryLock() {
		return false
	}
	defer s.rmu.Unlock()
	return s.r.buffered()
}

// PeekFrame waits until the next frame has begun to arrive, taking none
// of it: a deadline that passes meanwhile leaves the socket usable. It is
// what a transport.FrameWaiter's WaitFrame needs; the tcp transport offers
// it, the mux transport does not (see tcp's socket).
func (s *Socket) PeekFrame() error {
	if s.closed.Load() {
		if werr := s.sendFailure(); werr != nil {
			return werr
		}
		return transport.ErrClosed
	}
	s.rmu.Lock()
	err := s.r.waitFrame()
	s.rmu.Unlock()
	if err == nil {
		return nil
	}
	if werr := s.sendFailure(); werr != nil {
		return werr
	}
	if err == io.EOF && !s.closed.Load() {
		return io.EOF
	}
	return s.mapErr("recv", err)
}

// read reads one frame, bounding the time the rest of it may take once it
// has begun when the frame timeout is on. expired reports that the frame
// timeout passed.
func (s *Socket) read(m *transport.Message) (expired bool, err error) {
	if s.frame == nil {
		return false, s.r.Read(m)
	}
	if err := s.r.waitFrame(); err != nil {
		return false, err
	}
	if s.r.buffered() {
		return false, s.r.Read(m)
	}
	s.frame.begin()
	err = s.r.Read(m)
	return s.frame.finish(), err
}

// mapErr turns an error of the connection into the transport's errors.
func (s *Socket) mapErr(op string, err error) error {
	switch {
	case errors.Is(err, transport.ErrFrameTooLarge), errors.Is(err, transport.ErrProtocol):
		return err
	case s.closed.Load():
		return transport.ErrClosed
	case errors.Is(err, transport.ErrClosed):
		// The connection was closed under the socket by this end, and
		// says why (mux's stream of a session its Transport closed).
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, net.ErrClosed):
		return transport.ErrClosed
	case isTimeout(err):
		if IsMidFrame(err) {
			return fmt.Errorf("%w: deadline passed part way through a frame; socket closed", transport.ErrTimeout)
		}
		return transport.ErrTimeout
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		return peerGone{err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// peerGone is a read or write that failed because the peer went away (a
// reset, a broken pipe). It matches io.ErrClosedPipe, and its text is the
// connection's own error, which says already what failed and why ("read
// tcp ...: connection reset by peer"; mux's "mux: session closed: ..."):
// the cause once, not wrapped in words that repeat it.
type peerGone struct{ err error }

func (e peerGone) Error() string { return e.err.Error() }

// Is makes it match io.ErrClosedPipe.
func (e peerGone) Is(target error) bool { return target == io.ErrClosedPipe }

// Unwrap returns the connection's error.
func (e peerGone) Unwrap() error { return e.err }

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Close closes the connection; blocked Send and Recv calls return.
func (s *Socket) Close() error {
	var err error
	s.once.Do(func() {
		s.closed.Store(true)
		err = s.conn.Close()
	})
	return err
}

// LocalAddr returns the connection's local address.
func (s *Socket) LocalAddr() net.Addr { return s.conn.LocalAddr() }

// RemoteAddr returns the connection's remote address.
func (s *Socket) RemoteAddr() net.Addr { return s.conn.RemoteAddr() }

// SetDeadline sets the connection's read and write deadlines.
func (s *Socket) SetDeadline(t time.Time) error {
	if err := s.SetWriteDeadline(t); err != nil {
		return err
	}
	return s.SetReadDeadline(t)
}

// SetReadDeadline sets the connection's read deadline.
func (s *Socket) SetReadDeadline(t time.Time) error {
	if s.frame == nil {
		return s.conn.SetReadDeadline(t)
	}
	return s.frame.setUser(t)
}

// SetWriteDeadline sets the connection's write deadline. A Flush's
// interruption under way keeps its own, when earlier: one owner's deadline
// never clears another's.
func (s *Socket) SetWriteDeadline(t time.Time) error {
	s.setWDL(t)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.conn.SetWriteDeadline(earliest(t, s.q.interruptAt))
}

// setWDL records the write deadline t (wdl).
func (s *Socket) setWDL(t time.Time) {
	switch {
	case t.IsZero():
		s.wdl.Store(0)
	case t.Year() >= 2262: // past what UnixNano holds: never
		s.wdl.Store(math.MaxInt64)
	case t.Year() < 1678: // long past
		s.wdl.Store(math.MinInt64)
	default:
		s.wdl.Store(t.UnixNano())
	}
}

// writeDeadlinePassed reports whether the write deadline last set has
// passed.
func (s *Socket) writeDeadlinePassed() bool {
	dl := s.wdl.Load()
	return dl != 0 && time.Now().UnixNano() >= dl
}
