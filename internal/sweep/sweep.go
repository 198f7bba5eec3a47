// Package sweep is the quiet sweep: one goroutine for the whole process,
// ticking every QuietAfter while it has items, that visits each item on
// every tick until the item says it is done with.
//
// dispatch uses it for what must happen once a connection has been quiet
// for QuietAfter: a client connection that has had no reader for that
// long is given one back, to see what the server sends unasked (a Drain
// notice, the end of the connection), and a server connection whose call
// has run that long on the goroutine that read it has the reading handed
// on. One ticker for all of them, rather than a timer per connection set
// and stopped on every call: an item costs nothing while it is not added,
// and adding costs a lock only when the item is not held already (the
// items keep that flag themselves).
package sweep

import (
	"sync"
	"time"
)

// QuietAfter is how long an item may stay quiet before its sweep acts on
// it, and so the sweep's period: an item is visited between QuietAfter
// and twice that after it was last busy.
const QuietAfter = time.Millisecond

// Item is what the sweep watches: Sweep is given the time of the tick
// (UnixNano) and reports whether the sweep is done with the item. It runs
// on the sweep's goroutine under the sweep's lock, so it must not call Add
// or Remove.
type Item interface{ Sweep(now int64) bool }

// The sweep's state: it ticks only while it has items to watch.
var (
	mu      sync.Mutex
	items   = make(map[Item]struct{})
	running bool // the goroutine is ticking
)

// Add watches s from the next tick on, starting the sweep's goroutine if
// it has stopped. Adding an item already watched changes nothing.
func Add(s Item) {
	mu.Lock()
	items[s] = struct{}{}
	if !running {
		running = true
		go run()
	}
	mu.Unlock()
}

// Remove stops watching s, which is not visited again once Remove has
// returned.
func Remove(s Item) {
	mu.Lock()
	delete(items, s)
	mu.Unlock()
}

// run ticks while there are items, and returns once there are none.
func run() {
	t := time.NewTicker(QuietAfter)
	defer t.Stop()
	for {
		mu.Lock()
		if len(items) == 0 {
			running = false
			mu.Unlock()
			return
		}
		mu.Unlock()
		<-t.C
		now := time.Now().UnixNano()
		mu.Lock()
		for s := range items {
			if s.Sweep(now) {
				delete(items, s)
			}
		}
		mu.Unlock()
	}
}
