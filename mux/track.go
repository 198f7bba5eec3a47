package mux

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
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
// which yamux reports as io.EOF too.
type tracker struct {
	mu    sync.Mutex
	flows map[uint32]*flow
}

// flow is what the tracker knows of one stream. It is forgotten once both
// ends have closed it or either has reset it.
type flow struct {
	localFIN, remoteFIN bool
	conn                *streamConn // nil until the stream is handed out
}

func newTracker() *tracker {
	return &tracker{flows: make(map[uint32]*flow)}
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
}

func newTapConn(c net.Conn, t *tracker) *tapConn {
	_, raw := c.(*net.TCPConn)
	tc := &tapConn{Conn: c, t: t, rawTCP: raw}
	// Bound once, so a scan does not allocate a closure.
	tc.inSeen = func(flags uint16, id uint32) { t.seen(false, flags, id) }
	tc.outSeen = func(flags uint16, id uint32) { t.seen(true, flags, id) }
	return tc
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.scan(b[:n], c.inSeen)
	return n, err
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
	n, err := c.Conn.Write(b)
	c.out.scan(b[:n], c.outSeen)
	return n, err
}

// maxJoined bounds the buffer kept for joining header and body over TLS.
const maxJoined = 64 << 10

// writeJoined writes the held header and then b, in one system call where
// the connection allows. It reports the bytes of b written.
func (c *tapConn) writeJoined(b []byte) (int, error) {
	c.holding = false
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
	c.out.scan(c.held[:h], c.outSeen)
	body := int(n - h)
	c.out.scan(b[:body], c.outSeen)
	if err == nil && h < hdrLen {
		err = io.ErrShortWrite
	}
	return body, err
}
