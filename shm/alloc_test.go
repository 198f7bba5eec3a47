package shm_test

import (
	"testing"

	"github.com/zerodial/transport/shm"
	"github.com/zerodial/transport/transporttest"
)

// TestRoundTripAllocs guards the steady state: a round trip with the same
// headers allocates nothing, on either end — the ring is the buffer, and
// the reader rebuilds the header map from the strings it kept.
func TestRoundTripAllocs(t *testing.T) {
	skipUnlessLinux(t)
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	tr := shm.New()
	defer tr.Close()
	c, s := transporttest.Pair(t, tr, "")
	if allocs := transporttest.RoundTrips(t, c, s, 64, 200); allocs != 0 {
		t.Errorf("round trip allocates %v times, want 0", allocs)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	skipUnlessLinux(b)
	tr := shm.New()
	defer tr.Close()
	c, s := transporttest.Pair(b, tr, "")
	transporttest.RoundTrips(b, c, s, 64, 0)
}
