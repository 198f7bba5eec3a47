// Package sweep is the quiet sweep: one goroutine per Group, ticking every
// period (Every, QuietAfter by default; Slow while no item is hurried)
// while the Group has items, that visits each item on every tick until the
// item says it is done with.
//
// dispatch uses it for what must happen once a connection has been quiet
// for a while: a client connection that has had no reader for 100 ms is
// given one back, to see what the server sends unasked (a Drain notice,
// the end of the connection), and a server connection whose call has run
// QuietAfter on the goroutine that read it has the reading handed on — at
// the next tick, every QuietAfter while a call of a method not known to be
// fast runs so, every Slow otherwise. One ticker for all the connections of a Client, and one for those
// of a Server, rather than a timer per connection set and stopped on every
// call: an item costs nothing while it is not added, and adding costs a
// lock only when the item is not held already (the items keep that flag
// themselves).
//
// A Group, not one sweep for the process, so that a sweep belongs to the
// owner whose connections it watches: inside a testing/synctest bubble,
// the goroutine and its ticker are the bubble's (they are started by the
// bubble's own Client or Server), tick in the bubble's time, watch nothing
// of another bubble's, and are gone once their owner has closed — a sweep
// for the whole process would be started by whichever bubble came first,
// and outlive it.
package sweep

import (
	"sync"
	"sync/atomic"
	"time"
)

// QuietAfter is the period of a Group whose Every is zero: how long an
// item may stay quiet before its sweep acts on it, an item being visited
// between one period and two after it was last busy.
const QuietAfter = time.Millisecond

// Item is what the sweep watches: Sweep is given the time of the tick
// (UnixNano) and reports whether the sweep is done with the item; an item
// quiet for the Group's Period is acted on. It runs
// on the sweep's goroutine under the sweep's lock, so it must not call Add
// or Remove.
type Item interface{ Sweep(now int64) bool }

// A Hurrier is an Item that says whether it needs its Group's Every now,
// or can wait for Slow; an Item that is not a Hurrier always needs Every.
// Hurried runs under the Group's lock, as Sweep does.
type Hurrier interface{ Hurried() bool }

// hurried reports whether s needs the Group's Every now.
func hurried(s Item) bool {
	h, ok := s.(Hurrier)
	return !ok || h.Hurried()
}

// Group is one sweep: the items of one owner, and the goroutine that
// ticks while there are any. The zero Group is ready to use; it must not
// be copied after first use.
type Group struct {
	// Every is the sweep's period, QuietAfter if zero; set before the
	// Group is first used. A tick costs the process a goroutine woken, and
	// while calls flow between two processes on one host that wake costs
	// more than the call: a Group whose items can wait should tick
	// seldom.
	Every time.Duration
	// Slow, if set, is the period while no item the Group watches is
	// hurried (Hurrier): an owner whose items can mostly wait that long
	// pays a tick that seldom while they do, and the Group ticks every
	// Every again as soon as one is hurried (Add, Hurry). Set before the
	// Group is first used.
	Slow time.Duration

	mu      sync.Mutex
	items   map[Item]struct{}
	running bool // the goroutine is ticking
	ended   bool // End was called: nothing is watched again
	// wake tells the goroutine that the items have gone, so that it
	// returns at once rather than at its next tick: a bubble's time stops
	// when its test's function returns, and the goroutine must not wait
	// for a tick then. Made by the Add that starts the goroutine.
	wake chan struct{}
	// slow says the goroutine ticks every Slow, or is deciding whether
	// to (pace): Hurry, which reads it without the lock, then wakes it.
	slow atomic.Bool
}

// Add watches s from the next tick on, starting the sweep's goroutine if
// it has stopped. Adding an item already watched changes nothing; after
// End, Add does nothing.
func (g *Group) Add(s Item) {
	g.mu.Lock()
	if g.ended {
		g.mu.Unlock()
		return
	}
	if g.items == nil {
		g.items = make(map[Item]struct{})
	}
	g.items[s] = struct{}{}
	if !g.running {
		g.running = true
		g.wake = make(chan struct{}, 1)
		go g.run(g.wake)
	} else if g.slow.Load() && hurried(s) {
		g.kick()
	}
	g.mu.Unlock()
}

// Hurry has the Group tick every Every from now on, if it ticks every
// Slow: an item it watches has become hurried. The item must say so
// (Hurried) before Hurry is called. It costs an atomic load when the Group
// ticks every Every already.
func (g *Group) Hurry() {
	if !g.slow.Load() {
		return
	}
	g.mu.Lock()
	g.kick()
	g.mu.Unlock()
}

// kick wakes the goroutine to look at its items again; with g.mu held.
func (g *Group) kick() {
	if g.running {
		select {
		case g.wake <- struct{}{}:
		default: // woken already
		}
	}
}

// Remove stops watching s, which is not visited again once Remove has
// returned.
func (g *Group) Remove(s Item) {
	g.mu.Lock()
	delete(g.items, s)
	g.stopIfEmpty()
	g.mu.Unlock()
}

// End stops watching every item, for good: the owner has closed. The
// goroutine returns without waiting for a tick.
func (g *Group) End() {
	g.mu.Lock()
	g.ended = true
	clear(g.items)
	g.stopIfEmpty()
	g.mu.Unlock()
}

// stopIfEmpty wakes the goroutine to return when there is nothing left to
// watch; with g.mu held.
func (g *Group) stopIfEmpty() {
	if len(g.items) == 0 {
		g.kick()
	}
}

// Period returns the sweep's period: Every, or QuietAfter.
func (g *Group) Period() time.Duration {
	if g.Every > 0 {
		return g.Every
	}
	return QuietAfter
}

// run ticks while there are items, and returns once there are none; it
// looks at its pace after each tick, and ticks every Every after a wake.
func (g *Group) run(wake chan struct{}) {
	period := g.pace()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		g.mu.Lock()
		if len(g.items) == 0 {
			g.running = false
			g.slow.Store(false)
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		p := g.Period()
		select {
		case <-t.C:
			now := time.Now().UnixNano()
			g.mu.Lock()
			for s := range g.items {
				if s.Sweep(now) {
					delete(g.items, s)
				}
			}
			g.mu.Unlock()
			p = g.pace()
		case <-wake:
			// Added or hurried: every Every until a tick finds none
			// hurried. Slowing only at a tick, never at a wake, keeps a
			// run of short hurries (a reply's write held, then written)
			// from waking the goroutine for each, and a wake from
			// putting off a tick that was due.
			g.slow.Store(false)
		}
		if p != period {
			period = p
			t.Reset(p)
		}
	}
}

// pace returns the period the items need: Slow while none is hurried,
// Every otherwise. It sets slow before it looks, so that an item hurried
// after its look finds slow set, and Hurry wakes the goroutine to look
// again.
func (g *Group) pace() time.Duration {
	if g.Slow <= 0 {
		return g.Period()
	}
	g.slow.Store(true)
	g.mu.Lock()
	defer g.mu.Unlock()
	for s := range g.items {
		if hurried(s) {
			g.slow.Store(false)
			return g.Period()
		}
	}
	return g.Slow
}
