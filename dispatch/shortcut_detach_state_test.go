package dispatch

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestDetachStateRace races detachState's transitions as a detached call
// makes them, the caller's against the worker's, over many calls at once:
// each call ends owned by exactly one of them, a caller is woken exactly
// when it slept and did not leave, and nobody waits for a wake-up that
// never comes (the test would hang). Each caller leaves half of its
// calls, as one whose context ends does, and yields before sleeping or
// leaving in some of them, as wait does, so that the worker moves first.
func TestDetachStateRace(t *testing.T) {
	const goroutines, calls = 8, 2000
	var callerOwns, workerOwns, woken, returnedSeen atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				var s detachState
				done := make(chan struct{}, 1)
				var worker sync.WaitGroup
				worker.Go(func() {
					switch s.handlerReturns() {
					case detachedRunning:
					case detachedWaiting:
						done <- struct{}{}
					case detachedAbandoned:
						workerOwns.Add(1)
					}
				})
				leave := (g+i/4)%2 == 0
				yieldFirst, yieldBeforeLeaving := i%4 == 1 || i%4 == 3, i%4 >= 2
				if yieldFirst {
					runtime.Gosched()
				}
				slept := s.callerSleeps()
				if slept && leave && yieldBeforeLeaving {
					runtime.Gosched()
				}
				switch {
				case !slept:
					returnedSeen.Add(1)
					callerOwns.Add(1)
				case leave && s.callerLeaves():
					// The worker owns the call now.
				default:
					<-done
					woken.Add(1)
					callerOwns.Add(1)
				}
				worker.Wait()
				if len(done) != 0 {
					t.Errorf("call %d/%d: a wake-up was left unread", g, i)
				}
				if p := s.phase(); p != detachedReturned && p != detachedAbandoned {
					t.Errorf("call %d/%d ended in state %d", g, i, p)
				}
			}
		})
	}
	wg.Wait()
	if got := callerOwns.Load() + workerOwns.Load(); got != goroutines*calls {
		t.Errorf("%d calls owned at the end (%d by the caller, %d by the worker), want %d, each by one",
			got, callerOwns.Load(), workerOwns.Load(), goroutines*calls)
	}
	t.Logf("%d found returned, %d woken, %d abandoned", returnedSeen.Load(), woken.Load(), workerOwns.Load())
}

// TestDetachStateFinal: returned and abandoned stay as they are, whoever
// moves next.
func TestDetachStateFinal(t *testing.T) {
	var s detachState
	if got := s.handlerReturns(); got != detachedRunning {
		t.Fatalf("handlerReturns on a new call found %d, want running", got)
	}
	if s.callerSleeps() || s.callerLeaves() {
		t.Error("the caller moved a returned call")
	}
	if p := s.phase(); p != detachedReturned {
		t.Errorf("state %d, want returned", p)
	}

	s = detachState{}
	if !s.callerSleeps() || !s.callerLeaves() {
		t.Fatal("the caller could not sleep and leave")
	}
	if got := s.handlerReturns(); got != detachedAbandoned {
		t.Errorf("handlerReturns after the caller left found %d, want abandoned", got)
	}
	if s.callerSleeps() || s.callerLeaves() {
		t.Error("the caller moved an abandoned call")
	}
	if p := s.phase(); p != detachedAbandoned {
		t.Errorf("state %d, want abandoned", p)
	}
}
