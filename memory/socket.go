package memory

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/dialled"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/spare"
)

// queueLen is how many messages a socket holds for a reader that is not
// reading, the analogue of a network socket's buffers: a sender blocks only
// once that many are waiting, and then without a copy of its message until
// its turn comes (sendWaiting).
const queueLen = 64

// message is a copy of a transport.Message in flight. Messages are pooled:
// Recv hands the copy's header and body to the receiver and keeps the
// receiver's old ones for the next Send, so steady state allocates nothing.
type message struct {
	header map[string]string
	body   []byte
}

var messages = sync.Pool{New: func() any { return new(message) }}

// socket is one end of an in-memory connection.
type socket struct {
	local, remote Addr
	max           int
	in            chan *message // what the peer sent to this end
	peer          *socket
	done          chan struct{} // closed by Close
	closed        atomic.Bool
	closeOnce     sync.Once
	rd, wd        deadline
	// turn is held by the one sender waiting for room in the peer's
	// queue with a copy of its message (sendWaiting).
	turn chan struct{}
	// peeked holds the message WaitFrame took from in, for the next Recv.
	peeked frameSlot
	// spare keeps the copy of the last message received, once delivered,
	// for this end's next Send (recycle).
	spare spare.Slot[message]
	// dialledBy is the set of the Transport that dialled this end, which
	// Close leaves; nil for an accepted end.
	dialledBy *dialled.Set
}

// pair makes the two connected ends of a new connection.
func pair(a, b Addr, max int) (*socket, *socket) {
	x := newSocket(a, b, max)
	y := newSocket(b, a, max)
	x.peer, y.peer = y, x
	return x, y
}

func newSocket(local, remote Addr, max int) *socket {
	s := &socket{local: local, remote: remote, max: max, in: make(chan *message, queueLen), done: make(chan struct{}), turn: make(chan struct{}, 1), rd: newDeadline(), wd: newDeadline()}
	s.rd.onExpire = func() { wakeUp(s.in) }
	return s
}

var errPeerClosed = fmt.Errorf("memory: send: %w", io.ErrClosedPipe)

func (s *socket) Send(m *transport.Message) error {
	if s.closed.Load() {
		return transport.ErrClosed
	}
	if s.peer.closed.Load() {
		return errPeerClosed
	}
	if s.wd.expired.Load() {
		return transport.ErrTimeout
	}
	if len(m.Header) > frame.MaxHeaderEntries || len(m.Body) > s.max {
		return tooLarge(m, s.max)
	}
	if len(s.peer.in) < cap(s.peer.in) {
		c, err := s.copyOf(m)
		if err != nil {
			return err
		}
		select {
		case s.peer.in <- c:
			return nil
		default:
		}
		c.body = nil // the copy is made again in its turn
		s.recycle(c)
	}
	return s.sendWaiting(m)
}

// sendWaiting sends m once the peer's queue has room. Senders that wait
// take turns, and only the one whose turn it is holds a copy of its
// message: a peer that has stopped reading makes this end hold its queue
// and one more copy, not a copy for every sender waiting (a Server's
// replies, which WithMaxBytesPerConn counts while they wait, would hold
// twice what it counts).
func (s *socket) sendWaiting(m *transport.Message) error {
	select {
	case s.turn <- struct{}{}:
	case <-s.done:
		return transport.ErrClosed
	case <-s.peer.done:
		return errPeerClosed
	case <-s.wd.wait():
		return transport.ErrTimeout
	}
	defer func() { <-s.turn }()
	c, err := s.copyOf(m)
	if err != nil {
		return err
	}
	select {
	case s.peer.in <- c:
		return nil
	case <-s.done:
		s.recycle(c)
		return transport.ErrClosed
	case <-s.peer.done:
		s.recycle(c)
		return errPeerClosed
	case <-s.wd.wait():
		s.recycle(c)
		return transport.ErrTimeout
	}
}

// copyOf returns a pooled copy of m, or ErrFrameTooLarge when m is over
// the socket's frame limit. The limit is checked as the header is copied,
// which saves a pass over it, and before the body is.
func (s *socket) copyOf(m *transport.Message) (*message, error) {
	c := s.spare.Get()
	if c == nil {
		c = messages.Get().(*message)
	}
	if c.header == nil && len(m.Header) > 0 {
		c.header = make(map[string]string, len(m.Header))
	}
	if hl := copyHeader(c.header, m.Header); hl+len(m.Body) > s.max {
		s.recycle(c)
		return nil, tooLarge(m, s.max)
	}
	c.body = append(c.body[:0], m.Body...)
	return c, nil
}

// tooLarge is the error of a Send of m over the frame limit max, in the
// words of every transport (frame.Check).
func tooLarge(m *transport.Message, max int) error {
	_, err := frame.Check(m, max)
	return err
}

// Recv waits on the socket's queue alone. Close, the peer's Close and the
// read deadline wake it by queueing the wake sentinel, because a select over
// those channels as well costs about three times as much as a plain receive.
// Every wait re-checks the state first, so a sentinel that arrives late is
// harmless, and one that cannot be queued (the queue is full) is not needed:
// with a full queue the receive does not block.
func (s *socket) Recv(m *transport.Message) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	s.deliver(c, m)
	return nil
}

var _ transport.FrameWaiter = (*socket)(nil)

// WaitFrame waits until a message has come, taking none of it
// (transport.FrameWaiter): the message waits in the socket's slot, where
// the next Recv finds it before anything queued after it. It fails as Recv
// would, and a read deadline that passes while it waits leaves the socket
// as it was.
func (s *socket) WaitFrame() error {
	s.peeked.mu.Lock()
	defer s.peeked.mu.Unlock()
	if err := s.recvState(); err != nil {
		return err
	}
	if s.peeked.full() {
		return nil
	}
	c, err := s.next()
	if err != nil {
		return err
	}
	s.peeked.fill(c)
	return nil
}

// next takes the next message: the one WaitFrame left in the slot, or the
// queue's next, waiting for it (Recv says how).
func (s *socket) next() (*message, error) {
	woken := false
	for {
		if err := s.recvState(); err != nil {
			if woken {
				wakeUp(s.in) // pass the wake on to any other blocked Recv
			}
			return nil, err
		}
		if c := s.peeked.take(); c != nil {
			return c, nil
		}
		// Read the peer's state before looking at the queue: whatever the
		// peer sent before closing is queued by the time its flag is seen.
		peerClosed := s.peer.closed.Load()
		select {
		case c := <-s.in:
			if c == wake {
				woken = true
				continue
			}
			return c, nil
		default:
		}
		if peerClosed {
			if woken {
				wakeUp(s.in)
			}
			return nil, io.EOF
		}
		c := <-s.in
		if c == wake {
			woken = true
			continue
		}
		return c, nil
	}
}

func (s *socket) recvState() error {
	if s.closed.Load() {
		return transport.ErrClosed
	}
	if s.rd.expired.Load() {
		return transport.ErrTimeout
	}
	return nil
}

// wake is queued to make a blocked Recv look at the socket's state again.
var wake = new(message)

// wakeUp queues the wake sentinel unless the queue is full.
func wakeUp(q chan *message) {
	select {
	case q <- wake:
	default:
	}
}

// deliver gives c's header and body to m and keeps m's old storage in c,
// which is recycled.
func (s *socket) deliver(c *message, m *transport.Message) {
	m.Header, c.header = c.header, m.Header
	m.Body, c.body = c.body, m.Body[:0]
	s.recycle(c)
}

// maxSpareBody bounds the body buffer of the copy a socket keeps as its
// spare, which lives as long as the socket: a larger one goes to the pool,
// whose idle buffers the collector frees.
const maxSpareBody = 64 << 10

// recycle keeps c, a copy this end has done with, as its spare for its next
// Send, or puts it back in the pool. A connection's two ends each free a
// copy per message received and take one per message sent, so a call
// makes no Pool round trip (spare.Slot).
func (s *socket) recycle(c *message) {
	if cap(c.body) > maxSpareBody || !s.spare.Put(c) {
		messages.Put(c)
	}
}

func (s *socket) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.done)
		wakeUp(s.in)      // our own blocked Recv
		wakeUp(s.peer.in) // the peer's blocked Recv, which now sees EOF
		if s.dialledBy != nil {
			s.dialledBy.Remove(s)
		}
	})
	return nil
}

func (s *socket) LocalAddr() net.Addr  { return s.local }
func (s *socket) RemoteAddr() net.Addr { return s.remote }

func (s *socket) SetDeadline(t time.Time) error {
	s.rd.set(t)
	s.wd.set(t)
	return nil
}

func (s *socket) SetReadDeadline(t time.Time) error {
	s.rd.set(t)
	return nil
}

func (s *socket) SetWriteDeadline(t time.Time) error {
	s.wd.set(t)
	return nil
}
