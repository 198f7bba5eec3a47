package dispatch

import (
	"sync"
	"sync/atomic"
	"time"
)

// replicaHealth is what the outcomes of a replica's calls say of it:
// whether it is left out, and until when. One outage is one ejection: the
// calls one broken connection or one drain fails together, and those
// refused while the replica is out, must not each eject it again (each
// ejection in a row doubles the time out). So an outcome counts only for what the replica
// has done since its last ejection: a failure only if its call was begun
// while the replica was in (at or after the end of its last time out), a
// success only if its call was begun after the last ejection. A call's
// beginning is the time its replica was picked (monoNow).
type replicaHealth struct {
	out   atomic.Int64 // left out until this time; in from then on
	clean atomic.Bool  // nothing to forget: a success changes nothing

	mu      sync.Mutex // orders the changes below, and of out
	since   int64      // the time of the last ejection
	fails   int        // transport failures in a row while in
	ejected int        // ejections since the last success
}

// monoNow is the time on the monotonic clock, in nanoseconds: a change of
// the wall clock moves no time out.
func monoNow() int64 { return int64(time.Since(monoEpoch)) }

var monoEpoch = time.Now()

// failed records the failure of a call begun at begun; atOnce ejects at
// the first (a replica shutting down), otherwise it takes after failures
// in a row. The time out is d, doubled at each ejection since the last
// success, up to 30 d: 1, 2, 4, 8, 16, then 30 times.
func (h *replicaHealth) failed(begun int64, atOnce bool, after int, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if begun < h.out.Load() {
		return // begun before its time out ended: the outage is counted
	}
	h.clean.Store(false)
	h.fails++
	if !atOnce && h.fails < after {
		return
	}
	n := min(h.ejected, 5)
	h.ejected++
	h.fails = 0
	h.since = monoNow()
	h.out.Store(h.since + int64(min(d<<n, 30*d)))
}

// succeeded records the success of a call begun at begun: the replica is
// in, and its failures are forgotten — unless the call was begun before
// the last ejection, when it says nothing of the replica since.
func (h *replicaHealth) succeeded(begun int64) {
	if h.clean.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if begun < h.since {
		return
	}
	h.fails, h.ejected = 0, 0
	if now := monoNow(); h.out.Load() > now {
		h.out.Store(now) // it answered while out (no other was left): in
	}
	h.clean.Store(true)
}
