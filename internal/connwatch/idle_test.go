package connwatch

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The idle watch's tests run in a synctest bubble, as the watchdog's do:
// on the real clock a loaded machine that did not run the test's Touch
// loop for a timeout made an active connection look idle.

// An idle watch expires once the timeout has passed with no activity and
// nothing in flight, not before; activity or a call in flight keep it
// from expiring.
func TestIdleWatch(t *testing.T) {
	const d = 80 * time.Millisecond
	t.Run("idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			expired := make(chan time.Time, 1)
			start := time.Now()
			w := NewIdle(d, func() bool { return false }, func() {}, func() { expired <- time.Now() })
			defer w.Stop()
			select {
			case at := <-expired:
				if waited := at.Sub(start); waited != d {
					t.Fatalf("expired after %v, want the timeout %v", waited, d)
				}
			case <-time.After(20 * d):
				t.Fatal("an idle connection did not expire")
			}
		})
	})
	t.Run("active", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
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
	})
	t.Run("busy", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			expired := make(chan time.Time, 1)
			var busy atomic.Bool
			busy.Store(true)
			w := NewIdle(d, busy.Load, func() {}, func() { expired <- time.Now() })
			defer w.Stop()
			time.Sleep(4 * d)
			select {
			case <-expired:
				t.Fatal("expired with a call in flight")
			default:
			}
			busy.Store(false)
			select {
			case <-expired:
			case <-time.After(20 * d):
				t.Fatal("did not expire once the call was answered")
			}
		})
	})
}

// The timeout counts from the last activity: a connection that was busy
// until some moment goes no sooner than the timeout after it, and goes.
func TestIdleCountsFromTheLastActivity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 80 * time.Millisecond
		expired := make(chan time.Time, 1)
		w := NewIdle(d, func() bool { return false }, func() {}, func() { expired <- time.Now() })
		defer w.Stop()
		var last time.Time
		for end := time.Now().Add(3 * d); time.Now().Before(end); time.Sleep(d / 4) {
			last = time.Now()
			w.Touch()
		}
		select {
		case at := <-expired:
			if idle := at.Sub(last); idle < d || idle > d+d/idleTicks {
				t.Fatalf("expired %v after the last activity, want the timeout %v and at most a tick more", idle, d)
			}
		case <-time.After(20 * d):
			t.Fatal("did not expire once activity stopped")
		}
	})
}

// quiet is told once a connection has been idle for a tick, once per
// spell of quiet: not again on the ticks that follow, and again after
// activity.
func TestIdleQuietOncePerSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 800 * time.Millisecond // a tick every 100 ms
		quiets := make(chan time.Time, 8)
		w := NewIdle(d, func() bool { return false }, func() { quiets <- time.Now() }, func() {})
		defer w.Stop()
		start := time.Now()
		select {
		case at := <-quiets:
			if waited := at.Sub(start); waited != d/idleTicks {
				t.Fatalf("quiet after %v, want a tick of %v", waited, d/idleTicks)
			}
		case <-time.After(20 * d):
			t.Fatal("quiet was not told of an idle connection")
		}
		time.Sleep(3*d/idleTicks + d/idleTicks/2) // three more quiet ticks
		select {
		case <-quiets:
			t.Fatal("quiet told twice in one spell of quiet")
		default:
		}
		w.Touch()
		select {
		case <-quiets:
		case <-time.After(20 * d):
			t.Fatal("quiet was not told again after activity")
		}
	})
}
