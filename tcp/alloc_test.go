package tcp_test

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

func pair(tb testing.TB) (client, server transport.Socket) {
	return transporttest.Pair(tb, tcp.New(), "127.0.0.1:0")
}

// TestRoundTripAllocs guards the steady state: a round trip with the same
// headers allocates nothing, on either end.
func TestRoundTripAllocs(t *testing.T) {
	c, s := pair(t)
	if allocs := transporttest.RoundTrips(t, c, s, 64, 200); allocs != 0 {
		t.Errorf("round trip allocates %v times, want 0", allocs)
	}
}

func BenchmarkRoundTrip64(b *testing.B) {
	c, s := pair(b)
	transporttest.RoundTrips(b, c, s, 64, 0)
}

// BenchmarkRawTCP64 is the floor: the same 74 bytes (a 64-byte body and its
// frame prefix) written and read back over a bare loopback connection.
func BenchmarkRawTCP64(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 74)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(b, err)
	buf := make([]byte, 74)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	<-done
}
