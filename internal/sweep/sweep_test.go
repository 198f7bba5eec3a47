package sweep_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/zerodial/transport/internal/sweep"
)

// waitLong bounds a wait for something that must happen: generous, since
// the machine may be loaded; only a failing test waits that long.
const waitLong = 10 * time.Second

// item says it is done after visits visits, and records the times it was
// given.
type item struct {
	visits int
	mu     sync.Mutex
	nows   []int64
	done   chan struct{} // closed at the last visit
}

func newItem(visits int) *item { return &item{visits: visits, done: make(chan struct{})} }

func (it *item) Sweep(now int64) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.nows = append(it.nows, now)
	if len(it.nows) == it.visits {
		close(it.done)
	}
	return len(it.nows) >= it.visits
}

func (it *item) seen() []int64 {
	it.mu.Lock()
	defer it.mu.Unlock()
	return append([]int64(nil), it.nows...)
}

func (it *item) wait(t *testing.T) {
	t.Helper()
	select {
	case <-it.done:
	case <-time.After(waitLong):
		t.Fatalf("visited %d times, not %d", len(it.seen()), it.visits)
	}
}

// An item is visited on every tick, with the tick's time, until it says
// the sweep is done with it, and not after; with no items left the
// sweep's goroutine ends (goleak), and a new item starts it again.
func TestSweepVisitsUntilDone(t *testing.T) {
	var g sweep.Group
	for round := range 2 {
		before := time.Now().UnixNano()
		a, b := newItem(3), newItem(5)
		g.Add(a)
		g.Add(b)
		g.Add(a) // already watched: still one visit a tick
		a.wait(t)
		b.wait(t)
		after := time.Now().UnixNano()
		time.Sleep(20 * sweep.QuietAfter)
		for _, it := range []*item{a, b} {
			nows := it.seen()
			if len(nows) != it.visits {
				t.Fatalf("round %d: visited %d times after saying done at %d", round, len(nows), it.visits)
			}
			for i, now := range nows {
				if now < before || now > after || (i > 0 && now <= nows[i-1]) {
					t.Fatalf("round %d: visit %d given %d, not a tick's time in [%d, %d] after the one before", round, i, now, before, after)
				}
			}
		}
		goleak.VerifyNone(t) // the sweep's goroutine has ended
	}
}

// A removed item is not visited once Remove has returned, and the sweep
// stops with nothing left.
func TestSweepRemove(t *testing.T) {
	var g sweep.Group
	it := newItem(1 << 30) // never done
	g.Add(it)
	deadline := time.Now().Add(waitLong)
	for len(it.seen()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("an item added was not visited")
		}
		time.Sleep(sweep.QuietAfter)
	}
	g.Remove(it)
	n := len(it.seen())
	time.Sleep(20 * sweep.QuietAfter)
	if m := len(it.seen()); m != n {
		t.Fatalf("visited %d times after Remove", m-n)
	}
	goleak.VerifyNone(t)
}

// Inside a testing/synctest bubble a Group ticks in the bubble's time:
// an item is visited every QuietAfter exactly, from the Add on. Bubbles
// that run at once each have their own sweep, which ticks in their own
// time and ends with them.
func TestSweepInBubble(t *testing.T) {
	for _, name := range []string{"one", "two", "three"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var g sweep.Group
				start := time.Now().UnixNano()
				it := newItem(3)
				g.Add(it)
				<-it.done
				synctest.Wait() // the sweep's goroutine has returned
				want := []int64{start + int64(sweep.QuietAfter), start + 2*int64(sweep.QuietAfter), start + 3*int64(sweep.QuietAfter)}
				if got := it.seen(); !slices.Equal(got, want) {
					t.Fatalf("visited at %v, want %v", got, want)
				}
			})
		})
	}
}

// A Group whose Every is set ticks at that period, and says so.
func TestSweepEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := sweep.Group{Every: 100 * time.Millisecond}
		if got := g.Period(); got != g.Every {
			t.Fatalf("Period() = %v, want %v", got, g.Every)
		}
		start := time.Now().UnixNano()
		it := newItem(2)
		g.Add(it)
		<-it.done
		synctest.Wait()
		want := []int64{start + int64(g.Every), start + 2*int64(g.Every)}
		if got := it.seen(); !slices.Equal(got, want) {
			t.Fatalf("visited at %v, want %v", got, want)
		}
	})
	var g sweep.Group
	if got := g.Period(); got != sweep.QuietAfter {
		t.Fatalf("the zero Group's Period() = %v, want %v", got, sweep.QuietAfter)
	}
}

// hurryItem is an item that says it is hurried when the test says so.
type hurryItem struct {
	*item
	hurry atomic.Bool
}

func (h *hurryItem) Hurried() bool { return h.hurry.Load() }

// A Group with Slow ticks every Slow while no item is hurried, and every
// Every from the moment one is — when it says so and Hurry is called, or
// when a hurried item is added — until none is.
func TestSweepSlow(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, how := range []string{"Hurry", "Add"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := sweep.Group{Every: time.Millisecond, Slow: 100 * time.Millisecond}
				start := time.Now().UnixNano()
				it := &hurryItem{item: newItem(3)}
				g.Add(it)
				time.Sleep(150 * time.Millisecond)
				if how == "Hurry" {
					it.hurry.Store(true)
					g.Hurry()
				} else {
					other := &hurryItem{item: newItem(1)}
					other.hurry.Store(true)
					g.Add(other)
				}
				<-it.done
				synctest.Wait() // the sweep's goroutine has returned
				// Hurried itself, it is visited every Every from then on;
				// when the other, hurried, item was added, and done with
				// at its first visit, the Group is slow again.
				want := []int64{start + 100*ms, start + 151*ms, start + 152*ms}
				if how == "Add" {
					want[2] = start + 251*ms
				}
				if got := it.seen(); !slices.Equal(got, want) {
					t.Fatalf("visited at %v, want %v", got, want)
				}
			})
		})
	}
}

// Removing the last item, or ending the Group, ends its goroutine at once,
// with no tick to wait for: the bubble's time stops when its function
// returns, and a goroutine left waiting for a tick then is a deadlock. A
// Group ended watches nothing again.
func TestSweepEndsWithoutTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g sweep.Group
		it := newItem(1 << 30)
		g.Add(it)
		time.Sleep(sweep.QuietAfter / 2)
		g.Remove(it)
	})
	synctest.Test(t, func(t *testing.T) {
		var g sweep.Group
		a, b := newItem(1<<30), newItem(1<<30)
		g.Add(a)
		g.Add(b)
		time.Sleep(5 * sweep.QuietAfter / 2)
		g.End()
		g.Add(a)
		time.Sleep(5 * sweep.QuietAfter)
		if n := len(a.seen()); n != 2 {
			t.Fatalf("visited %d times, want 2 (before End, none after)", n)
		}
	})
}
