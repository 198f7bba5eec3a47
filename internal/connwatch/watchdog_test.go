package connwatch

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The watchdog's tests run in a synctest bubble: its ticks are timers, and
// on the bubble's clock a reply is waiting exactly as long as the test
// says. On the real clock a loaded machine that did not run the test
// between a Begin and its End for a timeout made a reply look stuck, and a
// test of "no stall while replies go out" failed.

// A reply that waits the timeout, with none written meanwhile, stalls the
// connection, and not before the timeout: the watchdog counts whole ticks
// from a moment the reply was already waiting.
func TestWatchdogStallsAWaitingReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 80 * time.Millisecond
		stalled := make(chan time.Time, 1)
		w := NewWatchdog(d, func() { stalled <- time.Now() })
		defer w.Stop()
		start := time.Now()
		w.Begin()
		select {
		case at := <-stalled:
			if waited := at.Sub(start); waited < d || waited > d+d/watchdogTicks {
				t.Fatalf("stalled after %v, want the timeout %v and at most a tick more", waited, d)
			}
		case <-time.After(20 * d):
			t.Fatal("a reply waiting 20 timeouts did not stall the connection")
		}
		w.End()
	})
}

// Replies that each take less than the timeout keep the connection even
// when one or another is always being written, far longer than the
// timeout: only a reply that waits the whole timeout counts.
func TestWatchdogSparesProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 40 * time.Millisecond
		var stalls atomic.Int32
		w := NewWatchdog(d, func() { stalls.Add(1) })
		defer w.Stop()
		w.Begin() // overlapping replies: never a moment with none waiting
		for end := time.Now().Add(10 * d); time.Now().Before(end); {
			w.Begin()
			w.End()
			time.Sleep(d / 10)
			w.End()
			w.Begin()
		}
		w.End()
		if n := stalls.Load(); n != 0 {
			t.Fatalf("%d stalls of a connection whose replies went out", n)
		}
	})
}

// With no reply waiting, the timer disarms after one tick; the next reply
// sets it again and is still watched.
func TestWatchdogDisarmsAndRearms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 40 * time.Millisecond
		stalled := make(chan struct{}, 1)
		w := NewWatchdog(d, func() { stalled <- struct{}{} })
		defer w.Stop()
		w.Begin()
		w.End()
		time.Sleep(d / watchdogTicks)
		synctest.Wait() // the first tick has run
		if w.armed.Load() {
			t.Fatal("the watchdog stayed armed a tick with no reply waiting")
		}
		select {
		case <-stalled:
			t.Fatal("stalled with no reply waiting")
		default:
		}
		w.Begin()
		select {
		case <-stalled:
		case <-time.After(20 * d):
			t.Fatal("a reply begun after the watchdog disarmed was not watched")
		}
		w.End()
	})
}

// Replies begun and ended by many goroutines, some just as a tick
// disarms, never leave a waiting reply unwatched. The goroutines that
// pause wake at a tick's instant, so that their Begins race the tick's
// disarming.
func TestWatchdogConcurrentReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 20 * time.Millisecond
		stalled := make(chan struct{}, 1)
		w := NewWatchdog(d, func() {
			select {
			case stalled <- struct{}{}:
			default:
			}
		})
		defer w.Stop()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					w.Begin()
					w.End()
					if (i+g)%5 == 0 {
						time.Sleep(d / watchdogTicks) // let ticks find no reply and disarm
					}
				}
			})
		}
		wg.Wait()
		select {
		case <-stalled:
			t.Fatal("stalled while every reply went out")
		default:
		}
		w.Begin()
		select {
		case <-stalled:
		case <-time.After(50 * d):
			t.Fatal("a waiting reply was left unwatched")
		}
		w.End()
	})
}

// replyTimeout is dispatch's DefaultReplyTimeout: the benchmark's timer
// never fires.
const replyTimeout = 10 * time.Second

// BenchmarkWatchdog is what watching one reply costs, beside the timer per
// reply the watchdog replaced.
func BenchmarkWatchdog(b *testing.B) {
	b.Run("watchdog", func(b *testing.B) {
		w := NewWatchdog(replyTimeout, func() {})
		defer w.Stop()
		for b.Loop() {
			w.Begin()
			w.End()
		}
	})
	b.Run("timer-per-reply", func(b *testing.B) {
		t := time.AfterFunc(time.Hour, func() {})
		for b.Loop() {
			t.Reset(replyTimeout)
			t.Stop()
		}
	})
}

// A reply that stays stuck past one stall is reported again a timeout
// later, and one whose write ends in time is not reported at all.
func TestWatchdogStallsAgainAndSparesAReplyInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 80 * time.Millisecond
		stalled := make(chan time.Time, 4)
		w := NewWatchdog(d, func() { stalled <- time.Now() })
		defer w.Stop()
		w.Begin()
		time.Sleep(d / 2)
		w.End() // written within the timeout
		time.Sleep(2 * d)
		select {
		case <-stalled:
			t.Fatal("stalled on a reply written within the timeout")
		default:
		}
		w.Begin()
		var first time.Time
		select {
		case first = <-stalled:
		case <-time.After(20 * d):
			t.Fatal("a waiting reply did not stall the connection")
		}
		select {
		case at := <-stalled:
			if gap := at.Sub(first); gap != d {
				t.Fatalf("stalled again %v after the first stall, want the timeout %v", gap, d)
			}
		case <-time.After(20 * d):
			t.Fatal("a reply still waiting was not reported again")
		}
		w.End()
	})
}
