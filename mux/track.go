package mux

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"sync"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/unixsock"
)

// yamux's frame header (see its spec.md, "Framing"): version, type, flags,
// stream ID, length; big-endian; 12 bytes.
const (
	hdrLen         = 12
	protoVersion   = 0
	typeData       = 0
	typeWindowUpd  = 1
	typeGoAway     = 3
	flagSYN        = 1
	flagFIN        = 4
	flagRST        = 8
	flagsOfConcern = flagSYN | flagFIN | flagRST
)

// tracker follows the open, close and reset flags of one session's streams
// as they cross the connection, in both directions.
//
// yamux treats a peer's FIN as a half-close: a stream the peer has closed
// still accepts writes, and a writer blocked on the flow-control window
// stays blocked, since the peer no longer reads and never widens it. A
// Socket is closed whole by either end, so a Send must fail once the peer
// has closed. yamux does not expose a stream's state, so the tracker reads
// the flags from the bytes yamux reads and writes, and tells the stream.
// It also lets a stream tell a peer's close (io.EOF) from a lost session,
// which yamux reports as io.EOF too, and it ends the streams of a session
// whose connection fails or is closed (markDead, endFrames).
type tracker struct {
	mu    sync.Mutex
	flows map[uint32]*flow
	// dead is set once the connection has failed or is being closed; the
	// session is then over, whatever yamux has noticed so far. cause is
	// why: the connection's error, or nil when the session was closed.
	dead  bool
	cause error
	// tls is the session's connection when it is TLS, for the streams'
	// TLS state; set before any stream exists.
	tls *tls.Conn
	// cred is the peer's, when the connection is a unix socket's and the
	// system reports it (credOK); the streams report it.
	cred   transport.PeerCred
	credOK bool
	// comp is what the streams' sockets do about compression, from the
	// prefaces the session's ends exchanged; set before any stream exists.
	comp frame.Compression

	// wmu is held by tapConn across each write of a data frame and the
	// count of its payload (streamConn.sent), and connClosed is closed once
	// the connection is: together they let a stream learn, once its session
	// has died, exactly what of its data went out (settledSent).
	wmu        sync.Mutex
	connClosed chan struct{}
	closeOnce  sync.Once
}

// flow is what the tracker knows of one stream. It is forgotten once both
// ends have closed it or either has reset it.
type flow struct {
	localFIN, remoteFIN bool
	conn                *streamConn // nil until the stream is handed out
}

func newTracker() *tracker {
	return &tracker{flows: make(map[uint32]*flow), connClosed: make(chan struct{})}
}

// attach ties c to its stream's flow and tells it at once if the peer has
// already closed. A missing flow means the stream was reset before it was
// handed out; yamux reports that on first use.
func (t *tracker) attach(id uint32, c *streamConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.flows[id]
	if f == nil {
		return
	}
	f.conn = c
	if f.remoteFIN {
		c.peerClosed()
	}
	if t.dead {
		c.sessionDied(t.cause)
	}
}

// markDead records that the session's connection has failed or is being
// closed, and tells every stream handed out, so that their blocked and
// future calls return at once.
//
// It must run before yamux's own shutdown reaches the streams: once a
// session is shut down, yamux v0.1.2's Stream.Read and Write loop without
// blocking until Session.Close has forced that stream closed, and Close
// does so one stream at a time, under a lock, while every blocked reader
// and writer spins; with thousands of streams that takes both cores for
// minutes. A stream told here has a read and write deadline in the past,
// which ends those loops at their next turn (see streamConn.sessionDied).
// So markDead runs where the failure is first seen: on a failed read or
// write of the connection, and before the session is closed, by this
// package or by yamux (tapConn.Close).
//
// cause is the connection's error that ended the session, nil for a close;
// the streams' errors wrap the first one given.
func (t *tracker) markDead(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead {
		return
	}
	t.dead, t.cause = true, cause
	for _, f := range t.flows {
		if f.conn != nil {
			f.conn.sessionDied(cause)
		}
	}
}

// wrote records n payload bytes of a data frame of stream id that the
// connection took; tapConn calls it with wmu held. The count goes to the
// stream itself, not its flow, which its close may forget (both ends' FIN)
// before the stream asks (settledSent). A stream not handed out, or reset
// by the peer, has nobody to ask.
func (t *tracker) wrote(id uint32, n int) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	if f := t.flows[id]; f != nil && f.conn != nil {
		f.conn.sent += uint64(n)
	}
	t.mu.Unlock()
}

// settledSent returns, once the connection is closed and no write of it is
// under way, how many payload bytes of c's data frames it took: from then
// on nothing more can go out, so the count is final. It must be called
// only once the session is shutting down (markDead has run, or yamux
// reports the session shut down), as yamux closes the connection straight
// after: the wait is short.
func (t *tracker) settledSent(c *streamConn) uint64 {
	<-t.connClosed
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return c.sent
}

// isDead reports whether markDead has run.
func (t *tracker) isDead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dead
}

// endFrames returns the frames that end, as the peer's FIN would, every
// stream the peer has not closed: a window update with FIN and no credit
// for each. tapConn hands them to yamux after the last bytes of a
// connection that has ended, so that yamux forgets the streams this end had
// closed at once.
//
// Without them, each such stream keeps the timer its Close armed
// (StreamCloseTimeout), which Session.Close does not stop and which
// references the stream and so the whole session: a closed session would
// stay in memory for the close timeout. A FIN for a stream closed here is
// what stops that timer and frees the stream (yamux's processFlags); for a
// stream still open it is a half-close, its buffered data still readable,
// and it sets no timer. The peer's own FIN has been passed to yamux already
// for every stream whose remoteFIN is set, so none gets a second one, which
// yamux would take for a protocol error.
func (t *tracker) endFrames() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b []byte
	for id, f := range t.flows {
		if f.remoteFIN {
			continue
		}
		var h [hdrLen]byte
		h[0] = protoVersion
		h[1] = typeWindowUpd
		binary.BigEndian.PutUint16(h[2:4], flagFIN)
		binary.BigEndian.PutUint32(h[4:8], id)
		b = append(b, h[:]...)
	}
	return b
}

// seen records the flags of one frame header. local is true for frames this
// end wrote.
func (t *tracker) seen(local bool, flags uint16, id uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.flows[id]
	if f == nil {
		if flags&flagSYN == 0 {
			return // a frame for a stream already forgotten
		}
		f = &flow{}
		t.flows[id] = f
	}
	if flags&flagRST != 0 {
		delete(t.flows, id)
		return
	}
	if flags&flagFIN != 0 {
		if local {
			f.localFIN = true
		} else if !f.remoteFIN {
			f.remoteFIN = true
			if f.conn != nil {
				f.conn.peerClosed()
			}
		}
		if f.localFIN && f.remoteFIN {
			delete(t.flows, id)
		}
	}
}

// open reports how many streams the tracker holds; for tests.
func (t *tracker) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.flows)
}

// scanner finds frame headers in one direction of the byte stream, however
// the stream is split into reads or writes.
type scanner struct {
	hdr    [hdrLen]byte
	have   int    // bytes of hdr filled
	skip   uint64 // payload bytes still to pass over
	broken bool   // not yamux: yamux itself fails the session
}

// atBoundary reports whether the bytes scanned so far end with a whole
// frame, so that a frame may follow.
func (s *scanner) atBoundary() bool {
	return s.have == 0 && s.skip == 0 && !s.broken
}

// scan passes b through the scanner and calls seen for every header with a
// flag of concern.
func (s *scanner) scan(b []byte, seen func(flags uint16, id uint32)) {
	for len(b) > 0 && !s.broken {
		if s.skip > 0 {
			n := uint64(len(b))
			if n > s.skip {
				n = s.skip
			}
			b = b[n:]
			s.skip -= n
			continue
		}
		n := copy(s.hdr[s.have:], b)
		s.have += n
		b = b[n:]
		if s.have < hdrLen {
			return
		}
		s.have = 0
		if s.hdr[0] != protoVersion || s.hdr[1] > typeGoAway {
			s.broken = true
			return
		}
		typ := s.hdr[1]
		if typ != typeData && typ != typeWindowUpd {
			continue // ping and go-away: no payload, no stream
		}
		flags := binary.BigEndian.Uint16(s.hdr[2:4])
		if flags&flagsOfConcern != 0 {
			seen(flags, binary.BigEndian.Uint32(s.hdr[4:8]))
		}
		if typ == typeData {
			s.skip = uint64(binary.BigEndian.Uint32(s.hdr[8:12]))
		}
	}
}

// tapConn is the connection a session runs over: it passes every byte
// through unchanged and shows the frame headers to the tracker. Reads come
// only from yamux's receive loop and writes only from its send loop, so
// each scanner has one user.
//
// When the connection fails or is closed it tells the tracker at once
// (markDead), and before it reports a read error it hands yamux the
// tracker's endFrames, if the connection ended between two frames, so that
// yamux frees the streams it would otherwise keep for the close timeout.
// (A connection that ends inside a frame gets none: bytes made up to
// finish the frame would reach a stream as data. Its session is freed
// when the close timers fire, as yamux alone would do.)
//
// It also joins each data frame's header to its body. yamux writes the
// 12-byte header and the body with two calls, which with TCP_NODELAY is two
// system calls and two packets per message, and system calls are most of
// what a small call over mux costs. So a data header is held back and goes
// out with the body that yamux always writes next, in one writev (or one
// write, over TLS).
type tapConn struct {
	net.Conn
	t       *tracker
	in, out scanner
	inSeen  func(uint16, uint32)
	outSeen func(uint16, uint32)

	held    [hdrLen]byte // a data frame's header, waiting for its body
	holding bool
	rawTCP  bool        // writev is one system call
	iov     [2][]byte   // backs bufs: WriteTo consumes bufs, not iov
	bufs    net.Buffers // so that a writev allocates nothing
	joined  []byte      // header and body copied together, when not rawTCP

	// Read's state once the connection has failed: the error to report,
	// and the end frames still to hand over before it.
	readErr error
	ending  []byte
}

func newTapConn(c net.Conn, t *tracker) *tapConn {
	raw := unixsock.Raw(c)
	t.tls, _ = c.(*tls.Conn)
	t.cred, t.credOK = unixsock.CredOf(c)
	tc := &tapConn{Conn: c, t: t, rawTCP: raw}
	// Bound once, so a scan does not allocate a closure.
	tc.inSeen = func(flags uint16, id uint32) { t.seen(false, flags, id) }
	tc.outSeen = func(flags uint16, id uint32) { t.seen(true, flags, id) }
	return tc
}

func (c *tapConn) Read(b []byte) (int, error) {
	if c.readErr == nil {
		n, err := c.Conn.Read(b)
		c.in.scan(b[:n], c.inSeen)
		if err == nil {
			return n, nil
		}
		// yamux ends the session on any read error.
		c.t.markDead(err)
		c.readErr = err
		if c.in.atBoundary() {
			c.ending = c.t.endFrames()
		}
		if n > 0 {
			return n, nil // the end frames follow these bytes
		}
	}
	if len(c.ending) > 0 {
		n := copy(b, c.ending)
		c.ending = c.ending[n:]
		return n, nil
	}
	return 0, c.readErr
}

func (c *tapConn) Write(b []byte) (int, error) {
	if c.holding {
		return c.writeJoined(b)
	}
	if len(b) == hdrLen && b[1] == typeData && binary.BigEndian.Uint32(b[8:12]) > 0 {
		copy(c.held[:], b)
		c.holding = true
		return len(b), nil
	}
	// Seen before it is written: the peer's answer to a frame can be read
	// before the write returns, and an answer (a FIN, a RST) to a SYN the
	// tracker has not seen yet would be ignored as a frame of a stream
	// already forgotten. A peer that closes a stream as soon as it is
	// opened, as a dialler serving nothing does (Incoming), answers that
	// fast. A write that fails ends the session, so bytes seen but not
	// sent do not matter.
	c.out.scan(b, c.outSeen)
	n, err := c.Conn.Write(b)
	if err != nil {
		c.t.markDead(err) // yamux ends the session on any write error
	}
	return n, err
}

// Close closes the connection. yamux calls it from Session.Close, just
// after shutting the session down, whoever closes the session: the
// tracker is told first.
func (c *tapConn) Close() error {
	c.t.markDead(nil)
	err := c.Conn.Close()
	c.t.closeOnce.Do(func() { close(c.t.connClosed) })
	return err
}

// maxJoined bounds the buffer kept for joining header and body over TLS.
const maxJoined = 64 << 10

// writeJoined writes the held header and then b, in one system call where
// the connection allows. It reports the bytes of b written.
func (c *tapConn) writeJoined(b []byte) (int, error) {
	c.holding = false
	// Seen before they are written, as in Write.
	c.out.scan(c.held[:], c.outSeen)
	c.out.scan(b, c.outSeen)
	c.t.wmu.Lock()
	defer c.t.wmu.Unlock()
	var n int64
	var err error
	if c.rawTCP {
		c.iov = [2][]byte{c.held[:], b}
		c.bufs = c.iov[:]
		n, err = c.bufs.WriteTo(c.Conn)
		c.iov[1] = nil // do not keep yamux's buffer
	} else {
		buf := append(append(c.joined[:0], c.held[:]...), b...)
		var w int
		w, err = c.Conn.Write(buf)
		n = int64(w)
		if cap(buf) <= maxJoined {
			c.joined = buf[:0]
		}
	}
	h := min(n, hdrLen)
	body := int(n - h)
	c.t.wrote(binary.BigEndian.Uint32(c.held[4:8]), body)
	if err == nil && h < hdrLen {
		err = io.ErrShortWrite
	}
	if err != nil {
		c.t.markDead(err)
	}
	return body, err
}
