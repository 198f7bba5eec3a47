package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/zerodial/transport/codec"
)

// serverCall is a call that arrived over the network, and the handler's
// context for it. One allocation serves both: a context built from
// context.WithCancel and a wrapper for its values would cost three, and the
// allocation budget of a call is small. It behaves as a context derived from
// context.Background with the caller's deadline, cancelled by a Cancel
// message or when the connection ends, whose only values are the caller's
// metadata — the same as the handler's context on the shortcut.
type serverCall struct {
	conn    *serverConn
	meth    *method
	args    any
	reply   any
	cdc     codec.Codec
	seq     uint64
	seqText string
	name    string

	md          Metadata
	deadline    time.Time
	hasDeadline bool

	mu     sync.Mutex
	done   chan struct{} // made by the first Done
	err    error
	timer  *time.Timer
	afters []*afterFunc
}

type afterFunc struct {
	f       func()
	stopped bool
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// setDeadline starts the timer that ends the call at d.
func (c *serverCall) setDeadline(d time.Duration) {
	c.deadline = time.Now().Add(d)
	c.hasDeadline = true
	if d <= 0 {
		c.cancel(context.DeadlineExceeded)
		return
	}
	c.mu.Lock()
	c.timer = time.AfterFunc(d, func() { c.cancel(context.DeadlineExceeded) })
	c.mu.Unlock()
}

// cancel ends the context with err, once.
func (c *serverCall) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	afters := c.afters
	c.afters = nil
	for _, a := range afters {
		a.stopped = true
	}
	c.mu.Unlock()
	for _, a := range afters {
		go a.f()
	}
}

func (c *serverCall) Deadline() (time.Time, bool) { return c.deadline, c.hasDeadline }

func (c *serverCall) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *serverCall) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *serverCall) Value(key any) any {
	if _, ok := key.(incomingKey); ok && c.md != nil {
		return c.md
	}
	return nil
}

// AfterFunc lets contexts derived from this one follow its cancellation
// without a goroutine each (the context package looks for this method).
func (c *serverCall) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.stopped {
			return false
		}
		a.stopped = true
		for i, x := range c.afters {
			if x == a {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				break
			}
		}
		return true
	}
}

func (c *serverCall) String() string { return "dispatch.serverCall" }
