package memory

import (
	"sync"
	"sync/atomic"
)

// frameSlot holds the message a socket's WaitFrame took from its queue to
// see that one had come, until the next Recv delivers it ahead of the
// queue. A channel cannot be peeked, and the slot is what makes memory
// sockets a transport.FrameWaiter: over one, dispatch's caller reads its
// own reply and a Server runs a call that comes alone on the goroutine
// that read it, sparing the wake of a second goroutine at each end of the
// call (BenchmarkUnary/zerodial-memory).
type frameSlot struct {
	// mu is held by WaitFrame from its look at the slot until it has
	// filled it: only the holder fills the slot, so it never holds two.
	mu sync.Mutex
	c  atomic.Pointer[message]
}

// take empties the slot and returns what it held, nil if nothing. An empty
// slot, the usual case, costs a load and no write.
func (f *frameSlot) take() *message {
	if f.c.Load() == nil {
		return nil
	}
	return f.c.Swap(nil)
}

// full reports whether the slot holds a message.
func (f *frameSlot) full() bool { return f.c.Load() != nil }

// fill puts c in the slot, which must be empty; the caller holds mu.
func (f *frameSlot) fill(c *message) { f.c.Store(c) }
