package memory

import (
	"sync"
	"sync/atomic"
	"time"
)

// deadline is a settable point in time with a channel that is closed when it
// passes, so a select can wait on it. Setting it again replaces the channel
// if the old one was already closed, which is what lets a socket work again
// after a deadline is cleared.
type deadline struct {
	mu      sync.Mutex
	timer   *time.Timer
	ch      chan struct{}
	expired atomic.Bool
	// onExpire, if set, runs each time the deadline passes, after ch is
	// closed; it must not block.
	onExpire func()
}

func newDeadline() deadline {
	return deadline{ch: make(chan struct{})}
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.ch // the timer fired, or is firing: wait until it has closed ch
	}
	d.timer = nil
	if d.expired.Load() {
		d.ch = make(chan struct{})
		d.expired.Store(false)
	}
	if t.IsZero() {
		return
	}
	if dur := time.Until(t); dur > 0 {
		ch := d.ch
		d.timer = time.AfterFunc(dur, func() {
			d.expired.Store(true)
			close(ch)
			d.expire()
		})
		return
	}
	d.expired.Store(true)
	close(d.ch)
	d.expire()
}

func (d *deadline) expire() {
	if d.onExpire != nil {
		d.onExpire()
	}
}

// wait returns a channel that is closed when the deadline passes.
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}
