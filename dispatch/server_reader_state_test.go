package dispatch

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerodial/transport/internal/sweep"
)

// TestReaderStateRace races readerState's moves as a serverConn's readers
// and the quiet sweep make them: readers run calls inline, quick or slow,
// and hold writes, which they write themselves or leave to the sweep; a
// sweep visits the connection while it watches it, at times when nothing
// is stale yet and at times when everything is, and hands the reading to a
// new reader when it hands an inline call on. The sweep is modelled as
// sweep.Group is: a watched flag under a lock that Add and the visits
// take. It checks that every hold is written exactly once, that every
// call handed on is told so exactly once, and that a slow call or a write
// left held is always handed on or written, that is that the connection is
// never left unwatched while either waits (the waits are bounded by a
// generous guard, which only a lost watch can reach).
func TestReaderStateRace(t *testing.T) {
	const ops = 4000
	const guard = time.Minute
	var (
		s     readerState
		clock atomic.Int64 // the readers' and the sweep's time, in ns

		mu      sync.Mutex // the sweep's lock
		watched bool       // whether the sweep watches the connection

		left                             atomic.Int64 // ops left to the readers
		holds, readerWrites, sweepWrites atomic.Int64
		handOns, toldHanded              atomic.Int64
		readers                          sync.WaitGroup // every reader goroutine, handed on or not
		finished                         = make(chan struct{})
	)
	clock.Store(1)
	left.Store(ops)
	add := func() {
		mu.Lock()
		watched = true
		mu.Unlock()
	}
	// waitFor spins until cond holds, or reports the hang.
	waitFor := func(what string, cond func() bool) {
		end := time.Now().Add(guard)
		for !cond() {
			if time.Now().After(end) {
				t.Errorf("%s: not within %v (a lost watch or a lost call waits for ever)", what, guard)
				return
			}
			runtime.Gosched()
		}
	}
	reader := func() {
		defer readers.Done()
		for {
			i := left.Add(-1)
			if i < 0 {
				// The connection ends: the last reader writes what it holds.
				if s.hold.take() {
					readerWrites.Add(1)
				}
				close(finished)
				return
			}
			switch i % 5 {
			case 0, 1, 2: // a call inline: quick, yielding once, or slow
				start := clock.Add(1)
				if s.beginInline(start, nil, i%2 == 0) {
					add()
				}
				if i%5 == 1 {
					runtime.Gosched()
				}
				if i%5 == 2 {
					waitFor("a slow call inline was handed on", func() bool { return s.inline.Load() != start })
				}
				if !s.endInline(start) {
					toldHanded.Add(1)
					// This goroutine reads no more; it writes what it
					// holds, as serverConn.run does.
					if s.hold.take() {
						readerWrites.Add(1)
					}
					return
				}
			case 3, 4: // a write held, which the reader writes or leaves to the sweep
				if s.hold.held() {
					continue
				}
				holds.Add(1)
				if s.holdWrite(clock.Add(1)) {
					add()
				}
				if i%5 == 3 {
					if s.hold.take() {
						readerWrites.Add(1)
					}
				} else {
					waitFor("a write held was written", func() bool { return !s.hold.held() })
				}
			}
		}
	}
	readers.Add(1)
	go reader()

	stop := make(chan struct{})
	sweeper := make(chan struct{})
	go func() {
		defer close(sweeper)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			now := clock.Load()
			if n%2 == 1 {
				now += int64(sweep.QuietAfter) // everything is stale
			}
			mu.Lock()
			if watched {
				write, handOn, done := s.visit(now)
				if write {
					sweepWrites.Add(1)
				}
				if handOn {
					handOns.Add(1)
					readers.Add(1) // the reader handed on is still counted
					go reader()
				}
				if done {
					watched = false
				}
			}
			mu.Unlock()
			runtime.Gosched()
		}
	}()

	select {
	case <-finished:
	case <-time.After(guard):
		t.Fatal("the readers did not finish")
	}
	// Every reader has returned, a reader handed on included: one handed on
	// between its beginInline's Store and its CompareAndSwap sets swept
	// and Adds the connection after the sweep let go of it, and the sweep,
	// still running, takes it back (in a server, the Add restarts the
	// sweep). Stopping the sweep before that reader's Add left swept set
	// with the connection unwatched, a state of the test, not of a server.
	readers.Wait()
	// With nothing inline and nothing held, the sweep lets go.
	waitFor("the sweep let go of a quiet connection", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !watched
	})
	close(stop)
	<-sweeper

	if s.hold.held() {
		t.Error("a write is still held")
	}
	if w := readerWrites.Load() + sweepWrites.Load(); w != holds.Load() {
		t.Errorf("%d writes (%d by readers, %d by the sweep) for %d holds, want one each",
			w, readerWrites.Load(), sweepWrites.Load(), holds.Load())
	}
	if handOns.Load() != toldHanded.Load() {
		t.Errorf("%d calls handed on, %d readers told so", handOns.Load(), toldHanded.Load())
	}
	if s.swept.Load() {
		t.Error("the sweep let go of the connection and swept is still set")
	}
	t.Logf("%d holds (%d written by the sweep), %d calls handed on", holds.Load(), sweepWrites.Load(), handOns.Load())
}
