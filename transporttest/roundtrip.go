package transporttest

import (
	"testing"

	"github.com/zerodial/transport"
)

// RoundTrips measures round trips of one message with the same headers
// every time, as an RPC's requests have, between the two ends of a
// connection: the server end echoes. With n > 0 it returns the allocations
// of one round trip (testing.AllocsPerRun over n runs, after a warm-up), for
// an allocation guard; given a *testing.B it runs the benchmark loop
// instead and returns 0. The sockets are closed when it returns.
func RoundTrips(tb testing.TB, client, server transport.Socket, body, n int) float64 {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Echo(server)
	}()
	defer func() {
		client.Close()
		<-done
	}()
	out := &transport.Message{Header: map[string]string{"Service-Method": "Arith.Multiply"}, Body: make([]byte, body)}
	var in transport.Message
	roundTrip := func() {
		if err := client.Send(out); err != nil {
			tb.Fatal(err)
		}
		if err := client.Recv(&in); err != nil {
			tb.Fatal(err)
		}
	}
	if b, ok := tb.(*testing.B); ok {
		b.ReportAllocs()
		for b.Loop() {
			roundTrip()
		}
		return 0
	}
	for range 10 {
		roundTrip() // warm the pools and buffers
	}
	return testing.AllocsPerRun(n, roundTrip)
}
