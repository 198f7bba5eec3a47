package mux

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/hashicorp/yamux"

	"github.com/zerodial/transport"
)

// BenchmarkRoundTrip: one 64-byte message there and back on an open
// stream, framing and Socket included.
func BenchmarkRoundTrip(b *testing.B) {
	tr := newTransport(b)
	l := listen(b, tr)
	serveEcho(b, l)
	c := dial(b, tr, l.Addr().String())
	out := &transport.Message{Body: make([]byte, 64)}
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
}

// BenchmarkYamuxRoundTrip is the baseline for BenchmarkRoundTrip: 64 raw
// bytes there and back on a bare yamux stream over loopback TCP, with the
// same yamux configuration and no framing.
func BenchmarkYamuxRoundTrip(b *testing.B) {
	cfg := defaultConfig()
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer nl.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := nl.Accept()
		if err != nil {
			return
		}
		sess, err := yamux.Server(conn, cfg.sessionConfig(discardLogger{}))
		if err != nil {
			return
		}
		defer sess.Close()
		st, err := sess.AcceptStream()
		if err != nil {
			return
		}
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(st, buf); err != nil {
				return
			}
			if _, err := st.Write(buf); err != nil {
				return
			}
		}
	}()
	conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", nl.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	sess, err := yamux.Client(conn, cfg.sessionConfig(discardLogger{}))
	if err != nil {
		b.Fatal(err)
	}
	st, err := sess.OpenStream()
	if err != nil {
		b.Fatal(err)
	}
	out, in := make([]byte, 64), make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Write(out); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(st, in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	sess.Close()
	<-served
}
