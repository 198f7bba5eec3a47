package connwatch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A reply that waits the timeout, with none written meanwhile, stalls the
// connection, and not before the timeout: the watchdog counts whole ticks
// from a moment the reply was already waiting.
func TestWatchdogStallsAWaitingReply(t *testing.T) {
	const d = 80 * time.Millisecond
	stalled := make(chan time.Time, 1)
	w := NewWatchdog(d, func() { stalled <- time.Now() })
	defer w.Stop()
	start := time.Now()
	w.Begin()
	select {
	case at := <-stalled:
		if waited := at.Sub(start); waited < d {
			t.Fatalf("stalled after %v, before the timeout %v", waited, d)
		}
	case <-time.After(20 * d):
		t.Fatal("a reply waiting 20 timeouts did not stall the connection")
	}
	w.End()
}

// Replies that each take less than the timeout keep the connection even
// when one or another is always being written, far longer than the
// timeout: only a reply that waits the whole timeout counts.
func TestWatchdogSparesProgress(t *testing.T) {
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
}

// With no reply waiting, the timer disarms after one tick; the next reply
// sets it again and is still watched.
func TestWatchdogDisarmsAndRearms(t *testing.T) {
	const d = 40 * time.Millisecond
	stalled := make(chan struct{}, 1)
	w := NewWatchdog(d, func() { stalled <- struct{}{} })
	defer w.Stop()
	w.Begin()
	w.End()
	deadline := time.Now().Add(20 * d)
	for w.armed.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the watchdog stayed armed with no reply waiting")
		}
		time.Sleep(d / 8)
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
}

// Replies begun and ended by many goroutines, some just as a tick
// disarms, never leave a waiting reply unwatched.
func TestWatchdogConcurrentReplies(t *testing.T) {
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
	for range 8 {
		wg.Go(func() {
			for end := time.Now().Add(5 * d); time.Now().Before(end); {
				w.Begin()
				w.End()
				if time.Now().UnixNano()%7 == 0 {
					time.Sleep(d / 3) // let ticks find no reply and disarm
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
		if gap := at.Sub(first); gap < d {
			t.Fatalf("stalled again %v after the first stall, before the timeout %v", gap, d)
		}
	case <-time.After(20 * d):
		t.Fatal("a reply still waiting was not reported again")
	}
	w.End()
}
