package connwatch

import (
	"sync"
	"sync/atomic"
	"time"
)

// idleTicks is how many ticks of an Idle make one idle timeout.
const idleTicks = 8

// Idle drops a network connection that has been idle — no message
// received, no reply written, no call in flight — for the idle timeout
// (WithIdleTimeout), one that stopped half way through a message included.
//
// It is one timer per connection, ticking every eighth of the timeout,
// rather than a read deadline moved as messages arrive: a read deadline
// makes yamux start a timer on every read of a mux stream that waits (six
// allocations a call on BenchmarkCall/mux), and moving it costs a clock
// read per message on every transport. A message costs one atomic add
// here. The price is precision: an idle connection goes between the
// timeout and 9/8 of it after its last activity.
type Idle struct {
	timeout  time.Duration
	busy     func() bool // whether calls are in flight
	quiet    func()      // told at the first quiet tick after activity
	expire   func()      // closes the connection
	timer    *time.Timer
	activity atomic.Uint64 // messages received and replies written

	mu     sync.Mutex // the tick's own state; only tick takes it
	last   uint64     // activity, as the last tick saw it
	quiets int        // ticks in a row with no activity and no call in flight
}

// NewIdle starts watching: quiet is called once the connection has
// been idle for an eighth of timeout, and expire once it has been idle for
// timeout, which must be positive.
func NewIdle(timeout time.Duration, busy func() bool, quiet, expire func()) *Idle {
	w := &Idle{timeout: timeout, busy: busy, quiet: quiet, expire: expire}
	// Set before it can fire: tick reads w.timer.
	w.timer = time.AfterFunc(time.Hour, w.tick)
	w.timer.Reset(timeout / idleTicks)
	return w
}

// Touch records activity: a message received or a reply written.
func (w *Idle) Touch() { w.activity.Add(1) }

// Stop stops watching a connection that is finished.
func (w *Idle) Stop() { w.timer.Stop() }

// tick runs every eighth of the timeout. Counting whole ticks from one
// that saw activity, idleTicks quiet ticks in a row mean the timeout has
// passed with nothing happening.
func (w *Idle) tick() {
	w.mu.Lock()
	n := w.activity.Load()
	if n != w.last || w.busy() {
		w.last, w.quiets = n, 0
	} else {
		w.quiets++
	}
	first, expired := w.quiets == 1, w.quiets >= idleTicks
	w.mu.Unlock()
	if expired {
		w.expire()
		return
	}
	if first {
		w.quiet()
	}
	w.timer.Reset(w.timeout / idleTicks)
}
