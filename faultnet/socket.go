package faultnet

import (
	"crypto/tls"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

// queueLen is how many frames a socket holds each way beyond the wrapped
// socket's own buffers: a sender waits once that many are on their way,
// and a slow reader holds the wrapped socket's sender back.
const queueLen = 64

// linger bounds how long a closed socket goes on sending what it was
// given before its Close to a peer that does not read it.
const linger = 30 * time.Second

// far is how far off a frame held by a partition that never heals is due.
const far = 100 * 365 * 24 * time.Hour

// item is a frame on its way, and when it arrives.
type item struct {
	m   transport.Message
	due time.Time
	// cut: not a frame but the reset a rule cut the connection with,
	// which comes after the frames sent before it.
	cut bool
}

// link is one way of a connection: the frames on it, in order.
type link struct {
	dir    Direction
	items  []item
	frames int       // frames sent this way so far
	free   time.Time // when the link is done carrying what it was given
	last   time.Time // when the last frame given arrives
}

// count is what a rule has counted on a connection, for its cuts.
type count struct{ frames, bytes int }

// socket is the dialling end of a connection through a Net. Both ways go
// through queues of its own: what Send is given is queued and written to
// the wrapped socket by the pump goroutine at its time; what the wrapped
// socket receives is read by the reader goroutine and queued until its
// time, for Recv.
type socket struct {
	t          *Transport
	n          *Net
	inner      transport.Socket
	conn       connID
	host, addr string
	max        int

	mu       sync.Mutex
	changed  chan struct{} // closed, and replaced, at every change of state
	up, down link
	counts   map[int]*count    // by rule
	methods  map[string]string // a stream's method, by its Seq
	closed   bool              // Close, or the Transport's
	aborted  bool              // reset, or the Transport's Close: nothing more goes
	reset    error             // what Send and Recv return once reset
	cutting  error             // a rule cut the connection: the reset on its way
	sendErr  error             // the wrapped socket's Send failed
	recvErr  error             // the wrapped socket's Recv failed
	rdl, wdl time.Time         // the deadlines
	lingerT  *time.Timer

	finishOnce sync.Once
	wg         sync.WaitGroup
}

var (
	_ transport.Socket      = (*socket)(nil)
	_ transport.FrameWaiter = (*socket)(nil)
	_ transport.AsyncSender = (*socket)(nil)
	_ transport.TLSReporter = (*socket)(nil)
)

func newSocket(t *Transport, c connID, inner transport.Socket) *socket {
	return &socket{
		t: t, n: t.n, inner: inner, conn: c, host: c.host, addr: c.addr, max: t.MaxFrameSize(),
		changed: make(chan struct{}), up: link{dir: ToListener}, down: link{dir: ToDialler},
		counts: map[int]*count{}, methods: map[string]string{},
	}
}

func (s *socket) start() {
	s.wg.Go(s.pump)
	s.wg.Go(s.read)
}

// broadcast wakes every goroutine waiting for a change; s.mu is held.
func (s *socket) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitLocked waits, with s.mu released, for a change, or until until if
// it is not zero.
func (s *socket) waitLocked(until time.Time) {
	ch := s.changed
	var at <-chan time.Time
	if !until.IsZero() {
		d := time.Until(until)
		if d <= 0 {
			return
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		at = timer.C
	}
	s.mu.Unlock()
	select {
	case <-ch:
	case <-at:
	}
	s.mu.Lock()
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

func passed(deadline, now time.Time) bool { return !deadline.IsZero() && !now.Before(deadline) }

// Send queues a copy of m to be written at its time, and returns: as a
// network socket's buffers do, it waits only when queueLen frames are on
// their way already. A failure of the write is returned by a later Send.
func (s *socket) Send(m *transport.Message) error {
	if _, err := frame.Check(m, s.max); err != nil {
		return err
	}
	s.mu.Lock()
	for {
		if err := s.sendState(); err != nil {
			s.mu.Unlock()
			return err
		}
		if len(s.up.items) < queueLen {
			s.arrive(&s.up, clone(m))
			s.mu.Unlock()
			return nil
		}
		s.waitLocked(s.wdl)
	}
}

// SendAsync is Send, which does not wait for the write
// (transport.AsyncSender).
func (s *socket) SendAsync(m *transport.Message) error { return s.Send(m) }

func (s *socket) sendState() error {
	switch {
	case s.closed:
		return transport.ErrClosed
	case s.reset != nil:
		return s.reset
	case s.cutting != nil:
		return s.cutting
	case s.sendErr != nil:
		return s.sendErr
	case passed(s.wdl, time.Now()):
		return transport.ErrTimeout
	}
	return nil
}

// Recv takes the next frame once it has arrived.
func (s *socket) Recv(m *transport.Message) error {
	it, err := s.next(true)
	if err != nil {
		return err
	}
	m.Header, m.Body = it.m.Header, it.m.Body
	return nil
}

// WaitFrame waits until a frame has arrived, taking none of it
// (transport.FrameWaiter).
func (s *socket) WaitFrame() error {
	_, err := s.next(false)
	return err
}

func (s *socket) next(take bool) (item, error) {
	s.mu.Lock()
	for {
		now := time.Now()
		var err error
		switch {
		case s.closed:
			err = transport.ErrClosed
		case s.reset != nil:
			err = s.reset
		case passed(s.rdl, now):
			err = transport.ErrTimeout
		}
		if err != nil {
			s.mu.Unlock()
			return item{}, err
		}
		if len(s.down.items) > 0 {
			it := s.down.items[0]
			if it.due.After(now) {
				s.waitLocked(earliest(it.due, s.rdl))
				continue
			}
			if it.cut {
				s.abortLocked(s.cutting)
				s.mu.Unlock()
				s.finish()
				return item{}, s.reset
			}
			if take {
				s.down.items = slices.Delete(s.down.items, 0, 1)
				s.broadcast()
			}
			s.mu.Unlock()
			return it, nil
		}
		if s.recvErr != nil {
			err := s.recvErr
			s.mu.Unlock()
			return item{}, err
		}
		s.waitLocked(s.rdl)
	}
}

// pump writes the frames Send queued to the wrapped socket, each at its
// time; after Close, it writes what is left and closes the wrapped
// socket.
func (s *socket) pump() {
	s.mu.Lock()
	for {
		if s.aborted {
			s.mu.Unlock()
			return
		}
		if len(s.up.items) == 0 && s.closed {
			s.mu.Unlock()
			s.finish()
			return
		}
		if len(s.up.items) > 0 && !s.up.items[0].due.After(time.Now()) {
			it := s.up.items[0]
			if it.cut {
				s.abortLocked(s.cutting)
				s.mu.Unlock()
				s.finish()
				return
			}
			s.up.items = slices.Delete(s.up.items, 0, 1)
			s.broadcast()
			s.mu.Unlock()
			err := s.inner.Send(&it.m)
			s.mu.Lock()
			if err != nil {
				if !s.aborted && !s.closed {
					s.sendErr = err
				}
				s.up.items = nil
				s.broadcast()
				closed := s.closed
				s.mu.Unlock()
				if closed {
					s.finish()
				}
				return
			}
			continue
		}
		var due time.Time
		if len(s.up.items) > 0 {
			due = s.up.items[0].due
		}
		s.waitLocked(due)
	}
}

// read reads what the wrapped socket receives into the queue for Recv,
// waiting while it is full.
func (s *socket) read() {
	for {
		var m transport.Message
		err := s.inner.Recv(&m)
		s.mu.Lock()
		if s.aborted || s.closed {
			s.mu.Unlock()
			return
		}
		if err != nil {
			s.recvErr = err
			s.broadcast()
			s.mu.Unlock()
			return
		}
		s.arrive(&s.down, &m)
		for s.cutting == nil && len(s.down.items) >= queueLen && !s.closed && !s.aborted {
			s.waitLocked(time.Time{})
		}
		cut := s.cutting != nil
		s.mu.Unlock()
		if cut {
			return // the reset on its way ends the connection
		}
	}
}

// arrive applies the rules to m, a frame sent on l, and queues it for its
// time unless it is lost, or queues instead the reset of a rule that cut
// the connection, behind the frames sent before. s.mu is held.
func (s *socket) arrive(l *link, m *transport.Message) {
	now := time.Now()
	l.frames++
	idx := l.frames
	method := s.methodOf(l.dir, m)
	size := frame.Size(m)
	var delay, busy time.Duration
	lost, dup := false, false
	for _, r := range s.n.matching(s.host, s.addr, l.dir, method) {
		c := s.counts[r.id]
		if c == nil {
			c = &count{}
			s.counts[r.id] = c
		}
		if r.CutAfterFrames > 0 && c.frames >= r.CutAfterFrames || r.CutAfterBytes > 0 && c.bytes+size > r.CutAfterBytes {
			s.event(l.dir, idx, method, Cut, 0)
			s.cutting = s.resetErr()
			l.items = append(l.items, item{due: later(now, l.last), cut: true})
			s.broadcast()
			return
		}
		c.frames++
		c.bytes += size
		if r.Loss > 0 && s.n.draw(s.conn, l.dir, idx, r, "loss") < r.Loss {
			lost = true
		}
		if r.Duplicate > 0 && duplicable(m) && s.n.draw(s.conn, l.dir, idx, r, "duplicate") < r.Duplicate {
			dup = true
		}
		delay += r.Latency
		if r.Jitter > 0 {
			delay += time.Duration(s.n.draw(s.conn, l.dir, idx, r, "jitter") * float64(r.Jitter))
		}
		busy += r.SlowReader
		if r.Bandwidth > 0 {
			busy += time.Duration(int64(size) * int64(time.Second) / int64(r.Bandwidth))
		}
	}
	if lost {
		s.event(l.dir, idx, method, Lost, 0)
		return
	}
	start := now
	if l.free.After(start) {
		start = l.free
	}
	l.free = start.Add(busy)
	due := l.free.Add(delay)
	if due.Before(l.last) {
		due = l.last
	}
	if h := s.n.heldUntil(s.host, s.addr, now); h.holds {
		until := h.until
		if h.never {
			until = now.Add(far)
		}
		if until.After(due) {
			due = until
		}
		var d time.Duration
		if !h.never {
			d = due.Sub(now)
		}
		s.event(l.dir, idx, method, Held, d)
	} else if d := due.Sub(now); d > 0 {
		s.event(l.dir, idx, method, Delayed, d)
	}
	l.last = due
	l.items = append(l.items, item{m: *m, due: due})
	if dup {
		s.event(l.dir, idx, method, Duplicated, 0)
		l.items = append(l.items, item{m: *clone(m), due: due})
	}
	s.broadcast()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (s *socket) event(dir Direction, frame int, method string, k Kind, d time.Duration) {
	s.n.record(Event{Conn: s.conn.String(), conn: s.conn, Dir: dir, Frame: frame, Method: method, Kind: k, Delay: d})
}

// methodOf returns the method of m, sent on s in dir: the Service-Method
// of a request or a response, or the one the open frame of its stream
// named. s.mu is held.
func (s *socket) methodOf(dir Direction, m *transport.Message) string {
	h := m.Header
	seq := h["Seq"]
	if sm, ok := h["Service-Method"]; ok {
		if dir == ToListener && h["Stream"] == "open" && seq != "" {
			s.methods[seq] = sm
		}
		return sm
	}
	if seq == "" {
		return ""
	}
	sm := s.methods[seq]
	if dir == ToDialler && h["Stream"] == "end" {
		delete(s.methods, seq)
	}
	return sm
}

// duplicable reports whether m is a request or a response, whose copy
// its receiver can tell by its Seq.
func duplicable(m *transport.Message) bool {
	return m.Header["Service-Method"] != "" && m.Header["Seq"] != "" && m.Header["Stream"] == ""
}

func clone(m *transport.Message) *transport.Message {
	c := &transport.Message{Body: append([]byte(nil), m.Body...)}
	if len(m.Header) > 0 {
		c.Header = maps.Clone(m.Header)
	}
	return c
}

// resetErr is the error of a connection reset: what a network socket
// reports when its peer, or a router, resets the connection.
func (s *socket) resetErr() error {
	return &net.OpError{Op: "read", Net: s.t.inner.String(), Source: s.inner.LocalAddr(), Addr: s.inner.RemoteAddr(),
		Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// cut resets the connection, as a partition beginning does.
func (s *socket) cut(k Kind) {
	s.mu.Lock()
	if s.aborted || s.closed {
		s.mu.Unlock()
		return
	}
	s.event(Both, 0, "", k, 0)
	s.abortLocked(s.resetErr())
	s.mu.Unlock()
	s.finish()
}

// abortLocked drops what the socket holds and stops it: Send and Recv
// fail with reset, or, if reset is nil, as closed. The caller calls
// finish with s.mu released. s.mu is held.
func (s *socket) abortLocked(reset error) {
	s.aborted = true
	if reset != nil {
		s.reset = reset
	} else {
		s.closed = true
	}
	s.up.items, s.down.items = nil, nil
	s.broadcast()
}

// abort stops the socket at once (the Transport's Close, a linger that
// ran out).
func (s *socket) abort(reset error) {
	s.mu.Lock()
	s.abortLocked(reset)
	s.mu.Unlock()
	s.finish()
}

// finish closes the wrapped socket, which ends the goroutines, and
// forgets the socket.
func (s *socket) finish() {
	s.finishOnce.Do(func() {
		s.inner.Close()
		s.t.forget(s)
		s.n.forget(s)
		s.mu.Lock()
		if s.lingerT != nil {
			s.lingerT.Stop()
		}
		s.mu.Unlock()
	})
}

// Close closes the socket: Send and Recv fail with transport.ErrClosed.
// What Send was given goes on to the peer at its time, as a network
// socket's buffers do, for linger at most; then the peer sees the end.
func (s *socket) Close() error {
	s.mu.Lock()
	if s.closed || s.aborted {
		s.closed = true // a reset socket, closed, says so
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.down.items = nil
	lingers := len(s.up.items) > 0
	if lingers {
		s.lingerT = time.AfterFunc(linger, func() { s.abort(nil) })
	}
	s.broadcast()
	s.mu.Unlock()
	if !lingers {
		s.finish()
	}
	return nil
}

func (s *socket) LocalAddr() net.Addr  { return s.inner.LocalAddr() }
func (s *socket) RemoteAddr() net.Addr { return s.inner.RemoteAddr() }

// TLS is the wrapped socket's (transport.TLSReporter), false if it does
// not say.
func (s *socket) TLS() (tls.ConnectionState, bool) {
	if r, ok := s.inner.(transport.TLSReporter); ok {
		return r.TLS()
	}
	return tls.ConnectionState{}, false
}

// PeerCred is the wrapped socket's (transport.PeerCredReporter), false if
// it does not say.
func (s *socket) PeerCred() (transport.PeerCred, bool) {
	if r, ok := s.inner.(transport.PeerCredReporter); ok {
		return r.PeerCred()
	}
	return transport.PeerCred{}, false
}

func (s *socket) SetDeadline(t time.Time) error {
	s.mu.Lock()
	s.rdl, s.wdl = t, t
	s.broadcast()
	s.mu.Unlock()
	return nil
}

func (s *socket) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	s.rdl = t
	s.broadcast()
	s.mu.Unlock()
	return nil
}

func (s *socket) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	s.wdl = t
	s.broadcast()
	s.mu.Unlock()
	return nil
}
