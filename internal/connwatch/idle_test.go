package connwatch

import (
	"sync/atomic"
	"testing"
	"time"
)

// An idle watch expires once the timeout has passed with no activity and
// nothing in flight, not before; activity or a call in flight keep it
// from expiring.
func TestIdleWatch(t *testing.T) {
	const d = 80 * time.Millisecond
	t.Run("idle", func(t *testing.T) {
		expired := make(chan time.Time, 1)
		start := time.Now()
		w := NewIdle(d, func() bool { return false }, func() {}, func() { expired <- time.Now() })
		defer w.Stop()
		select {
		case at := <-expired:
			if at.Sub(start) < d {
				t.Fatalf("expired after %v, before the timeout %v", at.Sub(start), d)
			}
		case <-time.After(20 * d):
			t.Fatal("an idle connection did not expire")
		}
	})
	t.Run("active", func(t *testing.T) {
		var expired atomic.Bool
		w := NewIdle(d, func() bool { return false }, func() {}, func() { expired.Store(true) })
		defer w.Stop()
		for end := time.Now().Add(5 * d); time.Now().Before(end); time.Sleep(d / 4) {
			w.Touch()
		}
		if expired.Load() {
			t.Fatal("expired while messages kept arriving")
		}
	})
	t.Run("busy", func(t *testing.T) {
		var expired, busy atomic.Bool
		busy.Store(true)
		w := NewIdle(d, busy.Load, func() {}, func() { expired.Store(true) })
		defer w.Stop()
		time.Sleep(4 * d)
		if expired.Load() {
			t.Fatal("expired with a call in flight")
		}
		busy.Store(false)
		deadline := time.Now().Add(20 * d)
		for !expired.Load() {
			if time.Now().After(deadline) {
				t.Fatal("did not expire once the call was answered")
			}
			time.Sleep(d / 8)
		}
	})
}
