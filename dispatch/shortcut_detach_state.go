package dispatch

import "sync/atomic"

// detachState is where a detached call is (detachedCall), and so who owns
// it once its handler returns. Two parties move it on, lock-free: the
// caller waiting for the answer and the worker running the handler; what
// each finds when it moves says what it must do next.
//
//	          callerSleeps                 handlerReturns
//	running ───────────────▶ waiting ───────────────────────▶ returned
//	   │                        │      (the worker wakes the caller)
//	   │ handlerReturns         │ callerLeaves
//	   ▼                        ▼
//	returned                 abandoned
//	(the caller finds it     (the worker owns the call, and releases
//	without sleeping)        it when the handler returns)
//
// The transitions, each made at most once per call by the party named:
//
//   - callerSleeps, the caller about to sleep on the call's done channel
//     (detachedCall.wait): running → waiting. False if the handler has
//     returned already: the caller has its answer, and no wake-up is sent.
//   - callerLeaves, the caller whose context ended while it slept
//     (detachedCall.abandon): waiting → abandoned. False if the handler
//     returned meanwhile: the worker has sent, or is sending, the wake-up,
//     which the caller then takes, and the call is still the caller's.
//   - handlerReturns, the worker once the handler has returned
//     (detachedCall.answer): running or waiting → returned. It reports the
//     state it found: detachedRunning, nothing to do (the caller will
//     look); detachedWaiting, wake the caller; detachedAbandoned (left as
//     it is), the caller has gone and the worker releases the call.
//
// returned and abandoned are final. Whoever owns the call at the end owns
// it alone: the caller after returned, the worker after abandoned.
// The zero detachState is running; a pooled call is zeroed (release).
// TestDetachStateRace races the transitions.
type detachState struct{ v atomic.Int32 }

// detachPhase is one of detachState's states.
type detachPhase int32

const (
	detachedRunning detachPhase = iota
	detachedWaiting
	detachedReturned
	detachedAbandoned
)

// callerSleeps is the caller's running → waiting, before it sleeps; false
// when it finds the handler returned.
func (s *detachState) callerSleeps() bool {
	return s.v.CompareAndSwap(int32(detachedRunning), int32(detachedWaiting))
}

// callerLeaves is the caller's waiting → abandoned, when it stops waiting;
// false when it finds the handler returned (the call stays the caller's).
func (s *detachState) callerLeaves() bool {
	return s.v.CompareAndSwap(int32(detachedWaiting), int32(detachedAbandoned))
}

// handlerReturns is the worker's move once the handler has returned, to
// returned unless the caller has gone; it reports the state it found.
func (s *detachState) handlerReturns() detachPhase {
	if s.v.CompareAndSwap(int32(detachedRunning), int32(detachedReturned)) {
		return detachedRunning
	}
	if s.v.CompareAndSwap(int32(detachedWaiting), int32(detachedReturned)) {
		return detachedWaiting
	}
	return detachedAbandoned
}

// phase is the state now, for tests.
func (s *detachState) phase() detachPhase { return detachPhase(s.v.Load()) }
