package memory_test

import (
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/transporttest"
)

func pair(tb testing.TB) (client, server transport.Socket) {
	return transporttest.Pair(tb, memory.New(), "")
}

// TestRoundTripAllocs guards the steady state: a round trip with the same
// headers allocates nothing, on either end.
func TestRoundTripAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	c, s := pair(t)
	if allocs := transporttest.RoundTrips(t, c, s, 64, 200); allocs != 0 {
		t.Errorf("round trip allocates %v times, want 0", allocs)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	c, s := pair(b)
	transporttest.RoundTrips(b, c, s, 64, 0)
}

// BenchmarkChanPingPong is the floor: an unbuffered channel round trip
// between two goroutines.
func BenchmarkChanPingPong(b *testing.B) {
	ping, pong := make(chan []byte), make(chan []byte)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	v := make([]byte, 64)
	for b.Loop() {
		ping <- v
		<-pong
	}
	close(ping)
}
