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

// echo answers every message on s until s fails; the channel closes then.
func echo(s transport.Socket) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		transporttest.Echo(s)
	}()
	return done
}

// TestRoundTripAllocs guards the steady state: a round trip with the same
// headers allocates nothing, on either end.
func TestRoundTripAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	c, s := pair(t)
	done := echo(s)
	out := &transport.Message{Header: map[string]string{"Service-Method": "Arith.Multiply"}, Body: make([]byte, 64)}
	var in transport.Message
	roundTrip := func() {
		if err := c.Send(out); err != nil {
			t.Fatal(err)
		}
		if err := c.Recv(&in); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		roundTrip()
	}
	if allocs := testing.AllocsPerRun(200, roundTrip); allocs != 0 {
		t.Errorf("round trip allocates %v times, want 0", allocs)
	}
	c.Close()
	<-done
}

func BenchmarkRoundTrip(b *testing.B) {
	c, s := pair(b)
	done := echo(s)
	out := &transport.Message{Header: map[string]string{"Service-Method": "Arith.Multiply"}, Body: make([]byte, 64)}
	var in transport.Message
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Send(out); err != nil {
			b.Fatal(err)
		}
		if err := c.Recv(&in); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	<-done
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
