package connwatch

import (
	"sync"
	"sync/atomic"
	"time"
)

// ticks is the mechanism Idle and Watchdog share: a timer ticking at a
// fraction of a timeout that counts the ticks in a row without progress.
// What happens on the connection costs one atomic add (advance); only a
// tick reads the count, so the hot path reads no clock and sets no timer.
//
// A tick that sees the progress count moved since the tick before, or is
// told that the connection is held (a call in flight, no reply waiting),
// counts again from zero. So still reaching per ticks in a row means a
// whole timeout has passed, counted from a tick after which nothing moved:
// the watcher acts between the timeout and (per+1)/per of it after the
// last progress.
type ticks struct {
	per      int           // ticks that make one timeout
	period   time.Duration // the timeout divided by per
	timer    *time.Timer
	progress atomic.Uint64 // what the connection has done, counted

	mu    sync.Mutex // the tick's own state; only see takes it
	last  uint64     // progress, as the last tick saw it
	still int        // ticks in a row without progress
}

// init makes t tick per times a timeout, running tick, once next is
// called; the timer is set before it can fire, since tick resets it.
func (t *ticks) init(timeout time.Duration, per int, tick func()) {
	t.per, t.period = per, timeout/time.Duration(per)
	t.timer = time.AfterFunc(time.Hour, tick)
	t.timer.Stop()
}

// advance records progress.
func (t *ticks) advance() { t.progress.Add(1) }

// next sets the timer for the next tick.
func (t *ticks) next() { t.timer.Reset(t.period) }

// stop stops the timer; next sets it again.
func (t *ticks) stop() { t.timer.Stop() }

// see records a tick, held if something other than the progress count
// keeps the connection from counting as still, and returns how many ticks
// in a row have seen no progress. Once that reaches per the count starts
// again from zero.
func (t *ticks) see(held bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.progress.Load()
	if n != t.last || held {
		t.last, t.still = n, 0
		return 0
	}
	t.still++
	still := t.still
	if still >= t.per {
		t.still = 0
	}
	return still
}
