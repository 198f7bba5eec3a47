// Package flow is the flow control of dispatch's streams (WIRE.md,
// "Streams"). Each direction of a stream has a receiver with a window, in
// bytes of encoded messages, and a sender holding credit against it: an
// Inbox and a Credit. The same two pieces serve every path: on the network
// the receiver's grants travel as window frames and the connection's reader
// feeds the inbox; on the shortcut in copy mode they are calls between the
// two halves; in direct mode the inbox is a rendezvous (Inbox.Lend).
//
// The rule that makes a sender wait, and keeps windows from deadlocking:
// with o bytes outstanding (sent and not yet returned) and a window w, a
// message of n bytes may go when o+n <= w, or when o <= w/2. The second
// clause is what lets a message larger than the window (or than half of
// it) through, and it is what keeps batched grants from deadlocking: the
// receiver returns credit once it has consumed half its window, so a
// sender blocked with more than half outstanding is always owed a grant.
// A receiver therefore holds at most w/2 plus one message: bounded by the
// window and the frame limit, never by the sender.
//
// Nothing here blocks but Acquire, Lend and Next, and each waits with a
// Waiter, the stream end's own reasons to stop (its context, its Close).
package flow

import (
	"errors"
	"io"
	"sync"
)

// ErrWindow is a peer sending beyond its credit: a protocol error.
var ErrWindow = errors.New("dispatch: a stream's peer sent beyond its window")

// cost is what a message of n encoded bytes counts against a window: at
// least 1, so that empty messages are bounded too.
func cost(n int) int { return max(n, 1) }

// fits is the sending rule of the package doc.
func fits(out, n, window int) bool { return out+n <= window || out <= window/2 }

// Waiter is what a stream's blocking operations wait with: Check reports a
// reason to stop now (a context that ended, a stream that is over), and
// Wait blocks until ch fires (nil) or such a reason arises (its error).
type Waiter interface {
	Check() error
	Wait(ch <-chan struct{}) error
}

// Credit is a sender's view of its receiver's window.
type Credit struct {
	mu     sync.Mutex
	window int  // the receiver's window; 0 until known
	known  bool // the window has been announced
	out    int  // bytes sent and not yet returned
	err    error
	wake   chan struct{}
}

// NewCredit returns a sender's credit against a window of window bytes;
// known is false when the receiver announces its window later, with the
// first Grant; until then the rule holds against a window of 0: one
// message, of any size, may be outstanding.
func NewCredit(window int, known bool) *Credit {
	return &Credit{window: window, known: known, wake: make(chan struct{}, 1)}
}

// Acquire takes credit for n bytes, waiting while the rule says no. It
// never queues anything: a sender without credit waits in place, and stops
// waiting when w says so or the stream ends (Abort).
func (c *Credit) Acquire(n int, w Waiter) error {
	n = cost(n)
	for {
		if err := w.Check(); err != nil {
			return err
		}
		c.mu.Lock()
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if fits(c.out, n, c.window) {
			c.out += n
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		if err := w.Wait(c.wake); err != nil {
			return err
		}
	}
}

// Unacquire returns credit taken for a message that was not sent after all.
func (c *Credit) Unacquire(n int) {
	c.mu.Lock()
	c.out = max(c.out-cost(n), 0)
	c.mu.Unlock()
	signal(c.wake)
}

// Grant applies a grant of n bytes: the receiver's window if it is the
// first, bytes returned otherwise.
func (c *Credit) Grant(n int) {
	c.mu.Lock()
	if !c.known {
		c.window, c.known = n, true
	} else {
		c.out = max(c.out-n, 0)
	}
	c.mu.Unlock()
	signal(c.wake)
}

// Abort makes every later Acquire fail with err (the first one given).
func (c *Credit) Abort(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	signal(c.wake)
}

// signal wakes the one waiter of ch, if any, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Item is one message in an inbox: encoded bytes, or, in direct mode, the
// sender's own value.
type Item struct {
	Body []byte
	Ptr  any
	lent bool // Ptr is lent: its sender waits until the consumer is done
}

// KeptBody is the largest body buffer kept for reuse once its message has
// been handled: an inbox keeps up to maxFreeBuffers of them, and dispatch's
// connection readers keep one, so that the buffer of a message of
// megabytes is not pinned for as long as a stream or a connection lives.
const KeptBody = 64 << 10

// maxFreeBuffers bounds the buffers an inbox keeps for reuse.
const maxFreeBuffers = 8

// Inbox is a receiver's queue. Putting never blocks — the sender's credit
// has bounded what it may hold — so the reader of a connection can always
// hand a message on, and one stalled stream holds up nothing else. The
// consumer returns credit (grant) once it has taken half the window.
//
// In direct mode it is a rendezvous instead: the sender lends its value
// (Lend) and waits until the consumer asks for the next message or stops.
type Inbox struct {
	mu     sync.Mutex
	q      []Item
	head   int
	window int
	held   int // bytes received and not yet returned by a grant
	taken  int // bytes taken since the last grant
	grant  func(n int)
	// Queued is told how the bytes waiting in the queue change (the
	// Server's byte budget of the connection); nil if nobody counts. Set
	// before the inbox is used.
	Queued func(delta int)
	ended  bool  // the sender's side is over: nothing more comes
	err    error // why: nil for an orderly end
	stop   bool  // the consumer takes nothing more
	wake   chan struct{}

	free [][]byte // buffers of messages consumed, for the next ones
	cur  []byte   // the body the consumer holds

	// lending is the value lent that the consumer holds; returned tells
	// its sender that the consumer is done with it, or dropped it.
	lending  bool
	returned chan struct{}
	lentGone bool // the lent value was dropped, never seen by the consumer
}

// NewInbox returns a receiver's queue for a window of window bytes; grant
// is how the consumer returns credit to the sender (nil: not returned).
func NewInbox(window int, grant func(int)) *Inbox {
	return &Inbox{window: window, grant: grant, wake: make(chan struct{}, 1), returned: make(chan struct{}, 1)}
}

// Buffer returns a buffer to encode or copy a message into, reused from the
// messages consumed.
func (i *Inbox) Buffer() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	// Once stopped, a buffer the consumer let go of may still be read by
	// it (close comes from any goroutine): none is handed out again.
	if n := len(i.free); n > 0 && !i.stop {
		b := i.free[n-1]
		i.free = i.free[:n-1]
		return b[:0]
	}
	return nil
}

// Put queues an encoded message, which the inbox then owns. It fails with
// ErrWindow when the sender has gone beyond the rule of its credit (a
// peer's protocol error), and drops the message silently once the consumer
// has stopped or the sender's side has ended.
func (i *Inbox) Put(body []byte) error {
	n := cost(len(body))
	i.mu.Lock()
	if i.stop || i.ended {
		i.mu.Unlock()
		return nil
	}
	if !fits(i.held, n, i.window) {
		i.mu.Unlock()
		return ErrWindow
	}
	i.q = append(i.q, Item{Body: body})
	i.held += n
	queued := i.Queued
	i.mu.Unlock()
	if queued != nil {
		queued(len(body))
	}
	signal(i.wake)
	return nil
}

// Lend hands the consumer the sender's own value p and waits until the
// consumer is done with it: it has asked for the next message, or stopped.
// A value the consumer has not yet taken is withdrawn when w says stop; one
// it has taken is waited for regardless, since the consumer may still be
// reading it (the Borrows contract).
//
// A value refused or dropped because the consumer stopped fails with w's
// reason to stop, done only if it has none (dispatch's ErrStreamDone): a
// consumer stops as its side ends the sender's context (memStream.close),
// and whether the sender learns it from the stop or from the context — a
// race between two ready channels — must not change what its Send says
// (on the network, the context's end is all a sender sees).
func (i *Inbox) Lend(p any, w Waiter, done error) error {
	i.mu.Lock()
	if i.stop || i.ended {
		i.mu.Unlock()
		return stopped(w, done)
	}
	i.q = append(i.q, Item{Ptr: p, lent: true})
	i.lentGone = false
	i.mu.Unlock()
	signal(i.wake)
	err := w.Wait(i.returned)
	if err != nil {
		i.mu.Lock()
		if i.head < len(i.q) { // not taken yet: withdraw it
			i.q, i.head = i.q[:0], 0
			i.mu.Unlock()
			return err
		}
		i.mu.Unlock()
		// Taken: wait for the consumer to be done with it, whatever w
		// says, since it may still be reading it.
		<-i.returned
	}
	i.mu.Lock()
	gone := i.lentGone
	i.mu.Unlock()
	if gone {
		return stopped(w, done)
	}
	return nil
}

// stopped is what a Lend the consumer refused or dropped returns: w's
// reason to stop, or done.
func stopped(w Waiter, done error) error {
	if err := w.Check(); err != nil {
		return err
	}
	return done
}

// Finish ends the sender's side with err (nil: an orderly end) once the
// consumer has taken what was sent before.
func (i *Inbox) Finish(err error) {
	i.mu.Lock()
	if !i.ended {
		i.ended, i.err = true, err
	}
	i.mu.Unlock()
	signal(i.wake)
}

// Next returns the next message, io.EOF once the sender's side has ended in
// order, or the error it ended with; w may stop the wait first. The body of
// the message returned before is reused from here on.
func (i *Inbox) Next(w Waiter) (Item, error) {
	i.Done()
	for {
		if err := w.Check(); err != nil {
			return Item{}, err
		}
		i.mu.Lock()
		if i.head < len(i.q) {
			it := i.q[i.head]
			i.q[i.head] = Item{}
			if i.head++; i.head == len(i.q) {
				i.q, i.head = i.q[:0], 0
			}
			n, grant := 0, 0
			if it.lent {
				i.lending = true
			} else {
				n = cost(len(it.Body))
				i.taken += n
				if i.taken >= max(i.window/2, 1) {
					grant, i.taken = i.taken, 0
					i.held -= grant
				}
				i.cur = it.Body
			}
			queued := i.Queued
			i.mu.Unlock()
			if queued != nil && !it.lent {
				queued(-len(it.Body))
			}
			if grant > 0 && i.grant != nil {
				i.grant(grant)
			}
			return it, nil
		}
		if i.ended {
			err := i.err
			i.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return Item{}, err
		}
		i.mu.Unlock()
		if err := w.Wait(i.wake); err != nil {
			return Item{}, err
		}
	}
}

// Done says the consumer has finished with the message Next returned last:
// a lent value goes back to its sender, a body to the free buffers.
func (i *Inbox) Done() {
	i.mu.Lock()
	lent := i.lending
	i.lending = false
	if b := i.cur; b != nil && cap(b) <= KeptBody && len(i.free) < maxFreeBuffers && !i.stop {
		i.free = append(i.free, b[:0])
	}
	i.cur = nil
	i.mu.Unlock()
	if lent {
		i.returned <- struct{}{}
	}
}

// Close says the consumer takes nothing more: a value lent and not yet
// taken is dropped (its sender's Lend fails), and later messages are
// discarded. A value the consumer holds stays lent until it calls Done:
// Close may come from another goroutine while the consumer still reads it.
func (i *Inbox) Close() {
	i.mu.Lock()
	i.stop = true
	dropped, lentDropped := 0, false
	for _, it := range i.q[i.head:] {
		if it.lent {
			lentDropped = true
		} else {
			dropped += len(it.Body)
		}
	}
	i.q, i.head, i.free = nil, 0, nil
	if lentDropped {
		i.lentGone = true
	}
	queued := i.Queued
	i.mu.Unlock()
	if queued != nil && dropped > 0 {
		queued(-dropped)
	}
	if lentDropped {
		i.returned <- struct{}{}
	}
}
