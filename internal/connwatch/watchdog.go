package connwatch

import (
	"sync/atomic"
	"time"
)

// watchdogTicks is how many ticks of the watchdog make one reply timeout.
const watchdogTicks = 4

// Watchdog enforces WithReplyTimeout on one connection: when a reply
// has been waiting to be written for the timeout, with no other reply
// written meanwhile, it calls stall (which closes the connection).
//
// It is one timer per connection, ticking every quarter of the timeout
// while replies are being written, rather than a timer set and stopped for
// every reply: a reply costs three atomic operations and no clock read.
// BenchmarkCall/memory and /tcp are what it serves (a timer per reply cost
// about 1 µs a call on the memory path). The price is precision: a stalled
// reply closes the connection between the timeout and 5/4 of it after it
// began to wait.
type Watchdog struct {
	stall func()
	ticks ticks // progress: replies written so far

	writing atomic.Int64 // replies being written now
	armed   atomic.Bool  // the timer is set, or its tick is running
}

// NewWatchdog returns a watchdog calling stall when a reply waits longer
// than timeout, which must be positive.
func NewWatchdog(timeout time.Duration, stall func()) *Watchdog {
	w := &Watchdog{stall: stall}
	w.ticks.init(timeout, watchdogTicks, w.tick)
	return w
}

// Begin marks a reply as being written; End must follow, whatever the
// write's outcome.
func (w *Watchdog) Begin() {
	w.writing.Add(1)
	if !w.armed.Load() && w.armed.CompareAndSwap(false, true) {
		w.ticks.next()
	}
}

// End marks a reply begun with Begin as written (or failed).
func (w *Watchdog) End() {
	w.ticks.advance()
	w.writing.Add(-1)
}

// Stop stops the timer of a connection that is finished. A reply begun
// later sets it again, for one tick.
func (w *Watchdog) Stop() { w.ticks.stop() }

// tick runs every quarter of the timeout while replies are being written.
//
// Why it is right: whenever the timer is set (by Begin, or by tick itself)
// a reply is being written that began before, and a tick that saw a reply
// written since the tick before counts again from zero while one waits. So
// when watchdogTicks ticks in a row see none written, the reply that was
// waiting when counting began is still waiting: it has waited the timeout.
// With no reply waiting the count starts again from zero and the timer is
// left unset. Begin and tick both read the other's atomic after writing
// their own, so a reply begun as tick disarms is seen by one of them, and
// the CompareAndSwap lets only one set the timer.
func (w *Watchdog) tick() {
	waiting := w.writing.Load() > 0
	stuck := w.ticks.see(!waiting)
	if !waiting {
		w.armed.Store(false)
		if w.writing.Load() > 0 && w.armed.CompareAndSwap(false, true) {
			w.ticks.next()
		}
		return
	}
	w.ticks.next()
	if stuck == watchdogTicks {
		w.stall()
	}
}
