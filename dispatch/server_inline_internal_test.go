package dispatch

import (
	"testing"

	"github.com/zerodial/transport/internal/sweep"
)

// TestInlinePace: a method is known to be fast after knownFastAfter calls
// in a row under fastRun; a call between fastRun and sweep.QuietAfter
// changes nothing, and one of QuietAfter or longer makes it unknown again.
func TestInlinePace(t *testing.T) {
	var p inlinePace
	for i := range knownFastAfter {
		if p.known() {
			t.Fatalf("known to be fast after %d fast calls", i)
		}
		p.ran(int64(fastRun) - 1)
	}
	if !p.known() {
		t.Fatalf("not known to be fast after %d fast calls", knownFastAfter)
	}
	p.ran(int64(sweep.QuietAfter) - 1)
	if !p.known() {
		t.Fatal("a call held up short of QuietAfter made the method unknown")
	}
	p.ran(int64(sweep.QuietAfter))
	if p.known() {
		t.Fatal("a call of QuietAfter left the method known to be fast")
	}
	for range 2 * knownFastAfter {
		p.ran(0)
	}
	if got := p.fastRuns.Load(); got != knownFastAfter {
		t.Fatalf("fastRuns = %d after many fast calls, want it held at %d", got, knownFastAfter)
	}
}
