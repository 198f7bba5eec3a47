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
// beginning is the time its replica was picked (monoClock.now).
type replicaHealth struct {
	out   atomic.Int64 // left out until this time; in from then on
	clean atomic.Bool  // nothing to forget: a success changes nothing

	mu      sync.Mutex // orders the changes below, and of out
	since   int64      // the time of the last ejection
	fails   int        // transport failures in a row while in
	ejected int        // ejections since the last success
	why     error      // the failure that made the last ejection
	last    error      // the last failure counted since the last success
}

// monoClock is a replica set's clock: the time since the set was made, on
// the monotonic clock, in nanoseconds, so that a change of the wall clock
// moves no time out. The set's own epoch, not one taken when the process
// started: inside a testing/synctest bubble, time.Now is the bubble's,
// which begins in the year 2000, and a time measured from an epoch of the
// real clock would be decades in the past — every replica out until then.
type monoClock struct{ epoch time.Time }

func newMonoClock() monoClock { return monoClock{epoch: time.Now()} }

// now is the time on the clock.
func (c *monoClock) now() int64 { return int64(time.Since(c.epoch)) }

// wall is the wall-clock time of t (now), for people to read.
func (c *monoClock) wall(t int64) time.Time { return c.epoch.Add(time.Duration(t)) }

// failed records the failure err of a call begun at begun (on clock);
// atOnce ejects
// at the first (a replica shutting down), otherwise it takes after
// failures in a row. The time out is d, doubled at each ejection since the
// last success, up to 30 d: 1, 2, 4, 8, 16, then 30 times. It returns the
// time out when the failure ejected the replica, 0 otherwise.
func (h *replicaHealth) failed(clock *monoClock, begun int64, atOnce bool, after int, d time.Duration, err error) (out time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if begun < h.out.Load() {
		return 0 // begun before its time out ended: the outage is counted
	}
	h.clean.Store(false)
	h.fails++
	h.last = err
	if !atOnce && h.fails < after {
		return 0
	}
	n := min(h.ejected, 5)
	h.ejected++
	h.fails = 0
	h.why = err
	h.since = clock.now()
	out = min(d<<n, 30*d)
	h.out.Store(h.since + int64(out))
	return out
}

// succeeded records the success of a call begun at begun (on clock): the
// replica is
// in, and its failures are forgotten — unless the call was begun before
// the last ejection, when it says nothing of the replica since. back
// reports whether the replica had been ejected since its last success:
// this success readmits it for good.
func (h *replicaHealth) succeeded(clock *monoClock, begun int64) (back bool) {
	if h.clean.Load() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if begun < h.since {
		return false
	}
	back = h.ejected > 0
	h.fails, h.ejected, h.why, h.last = 0, 0, nil, nil
	if now := clock.now(); h.out.Load() > now {
		h.out.Store(now) // it answered while out (no other was left): in
	}
	h.clean.Store(true)
	return back
}

// healthState is what replicaHealth says of a replica at one moment.
type healthState struct {
	out     int64 // left out until (monoClock.now)
	fails   int
	ejected int
	why     error
	last    error
}

func (h *replicaHealth) state() healthState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return healthState{out: h.out.Load(), fails: h.fails, ejected: h.ejected, why: h.why, last: h.last}
}
