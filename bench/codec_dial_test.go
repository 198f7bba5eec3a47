package bench

import (
	"errors"
	"io"
	"net"
	"net/rpc"
	"sync"
	"testing"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/zerodial/transport/dispatch"
)

// serveConnOn serves srv on l, one ServeConn per accepted connection with
// the codec newCodec makes. The cleanup closes l and the Server and waits
// for every ServeConn to return. ServeConn closes a connection, not its
// codec, while the codec reads: msgpackrpc's codec allows no other.
func serveConnOn(tb testing.TB, l net.Listener, srv *dispatch.Server, newCodec func(io.ReadWriteCloser) rpc.ServerCodec) {
	tb.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeConn(conn, newCodec) })
		}
	})
	tb.Cleanup(func() {
		l.Close()
		srv.Close()
		wg.Wait()
	})
}

// TestMsgpackRPCDialCodecClose: a Client from DialCodec with msgpackrpc's
// client codec, the recipe of DialCodec's doc, makes calls and is closed,
// idle or with a call in flight (which fails with ErrShutdown), without a
// data race: msgpackrpc's Close writes a field its read reads unguarded,
// so DialCodec's Client closes the connection it dialled, not the codec,
// while the codec may be reading. Run it under -race.
func TestMsgpackRPCDialCodecClose(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		name := "idle"
		if inFlight {
			name = "call in flight"
		}
		t.Run(name, func(t *testing.T) {
			svc := newCompat()
			srv := compatServer(t, svc)
			l := loopbackListener(t)
			serveConnOn(t, l, srv, msgpackrpc.NewServerCodec)
			c, err := dispatch.DialCodec(t.Context(), nil, "tcp", l.Addr().String(), msgpackrpc.NewClientCodec)
			if err != nil {
				t.Fatal(err)
			}
			for i := range int64(4) {
				var p Product
				if err := c.Call(t.Context(), "Compat.Multiply", &Args{A: i, B: 3}, &p); err != nil || p.P != 3*i {
					t.Fatalf("Multiply(%d, 3) = %d, %v", i, p.P, err)
				}
			}
			if !inFlight {
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			held := make(chan error, 1)
			go func() {
				var p Product
				held <- c.Call(t.Context(), "Compat.Hold", &Args{A: 5}, &p)
			}()
			<-svc.started
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := <-held; !errors.Is(err, dispatch.ErrShutdown) {
				t.Fatalf("a call in flight at Close: %v, want ErrShutdown", err)
			}
			svc.release <- struct{}{}
		})
	}
}
