package connwatch

import (
	"testing"
	"time"
)

// see counts the ticks in a row without progress, from zero again after
// progress, when held, and once a timeout's worth is reached.
func TestTicksCount(t *testing.T) {
	var c ticks
	c.init(time.Hour, 4, func() { t.Error("ticked: next was never called") })
	defer c.stop()
	step := func(held bool, want int) {
		t.Helper()
		if got := c.see(held); got != want {
			t.Fatalf("see(%v) = %d, want %d", held, got, want)
		}
	}
	step(false, 1)
	step(false, 2)
	c.advance()
	step(false, 0) // progress since the tick before
	step(false, 1)
	step(true, 0) // held: a call in flight, no reply waiting
	for want := 1; want <= 4; want++ {
		step(false, want)
	}
	step(false, 1) // a timeout reached: counting again
	c.advance()
	c.advance()
	step(true, 0)
	step(false, 1) // two advances are one progress
	if c.period != 15*time.Minute {
		t.Fatalf("period %v, want a quarter of the timeout", c.period)
	}
}
