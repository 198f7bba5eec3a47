package connwatch

import "time"

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
	busy   func() bool // whether calls are in flight
	quiet  func()      // told at the first quiet tick after activity
	expire func()      // closes the connection
	ticks  ticks       // progress: messages received and replies written
}

// NewIdle starts watching: quiet is called once the connection has been
// idle for an eighth of timeout, and expire once it has been idle for
// timeout, which must be positive.
func NewIdle(timeout time.Duration, busy func() bool, quiet, expire func()) *Idle {
	w := &Idle{busy: busy, quiet: quiet, expire: expire}
	w.ticks.init(timeout, idleTicks, w.tick)
	w.ticks.next()
	return w
}

// Touch records activity: a message received or a reply written.
func (w *Idle) Touch() { w.ticks.advance() }

// Stop stops watching a connection that is finished.
func (w *Idle) Stop() { w.ticks.stop() }

// tick runs every eighth of the timeout. Counting whole ticks from one
// that saw activity, idleTicks quiet ticks in a row mean the timeout has
// passed with nothing happening; a call in flight counts as activity.
func (w *Idle) tick() {
	switch w.ticks.see(w.busy()) {
	case idleTicks:
		w.expire()
		return
	case 1:
		w.quiet()
	}
	w.ticks.next()
}
