package shm

import "time"

// The bounds of an end's spin budget: how long it looks at the ring for
// the peer's next bytes before it sleeps.
const (
	// minSpin is the budget of an end whose peer is mostly idle: long
	// enough to see the reply to a call being served (a few
	// microseconds), short enough that an end with nothing to do soon
	// sleeps.
	minSpin = 20 * time.Microsecond
	// maxSpin is the budget of an end whose peer answers promptly but not
	// always within minSpin: on a busy machine the peer's thread may not
	// run for some tens of microseconds, and every sleep then costs a
	// wake-up (a system call and a thread woken) at each end, several
	// times the call.
	maxSpin = 200 * time.Microsecond
)

// spinBudget is how long an end spins before it sleeps, learned from its
// own waits, as an adaptive mutex learns how long to spin: a wait that
// slept and was woken sooner than maxSpin after its spin ended would have
// been caught by a longer spin, and doubles the budget (at maxSpin, keeps
// it); one that slept longer found the peer idle, and halves it. A wait caught by spinning leaves it
// as it is. So an end of a connection in steady use spins long enough not
// to sleep, and one of a connection gone idle spins minSpin again after a
// few sleeps: the CPU a connection going idle costs is bounded by maxSpin
// per wait, and shrinks by half at each. It serves BenchmarkUnary's
// zerodial-shm-proc row (bench/): with a fixed 20 µs spin, one call in
// ten or more slept at 16 bytes on a 2-core machine. The zero value is
// minSpin. Not safe for concurrent use: each end's reader and writer have
// their own.
type spinBudget struct{ d time.Duration }

// get returns how long to spin.
func (b *spinBudget) get() time.Duration {
	if b.d == 0 {
		return minSpin
	}
	return b.d
}

// slept learns from a wait that slept: waited is the whole wait, spin
// included.
func (b *spinBudget) slept(waited time.Duration) {
	d := b.get()
	if waited-d < maxSpin { // the sleep, past the spin
		d *= 2
	} else {
		d /= 2
	}
	b.d = min(max(d, minSpin), maxSpin)
}
