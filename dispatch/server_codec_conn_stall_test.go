package dispatch_test

import (
	"context"
	"io"
	"net"
	"net/rpc"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/conntest"
)

// A request that has not wholly arrived is not a call in flight: the
// standard library's clients, over a connection that holds back the end of
// their request (conntest.HoldBack), the header whole and the body not, or
// trickled a byte at a time. In a synctest bubble, over net.Pipe: the
// times are the bubble's, exact whatever the machine's load.

// stalledCases are the ways a client stops part way through its request:
// the bytes of its first write held back, and the period at which they
// trickle (0: never). gob's body is a message of its own after the
// header's, so holding back its last byte leaves the header whole;
// jsonrpc's request is one JSON value, whose closing "}\n" held back cuts
// it before its header is whole (the control: it was always closed).
var stalledCases = []struct {
	name    string
	hold    int
	trickle time.Duration
}{
	{"stalled", 2, 0},
	{"trickled", 48, 250 * time.Millisecond},
}

// serveConn and serveCodec serve srv on conn through ServeConn or
// ServeCodec, with the codec newCodec makes.
func serveConn(srv *dispatch.Server, conn net.Conn, newCodec func(io.ReadWriteCloser) rpc.ServerCodec) {
	srv.ServeConn(conn, newCodec)
}

func serveCodec(srv *dispatch.Server, conn net.Conn, newCodec func(io.ReadWriteCloser) rpc.ServerCodec) {
	srv.ServeCodec(newCodec(conn))
}

// servePipeConn serves srv through serve with newCodec on one end of a
// net.Pipe, and returns the other end and a channel closed when serve
// returns.
func servePipeConn(srv *dispatch.Server, serve func(*dispatch.Server, net.Conn, func(io.ReadWriteCloser) rpc.ServerCodec), newCodec func(io.ReadWriteCloser) rpc.ServerCodec) (net.Conn, <-chan struct{}) {
	cc, sc := net.Pipe()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		serve(srv, sc, newCodec)
	}()
	return cc, ended
}

// serveStalled serves srv through serve with newCodec, and starts a
// call of Arith.EchoBlob from client over a connection that holds back the
// last hold bytes of the request, trickled at the period given (0: never).
// It returns the client's call and a channel closed when serve returns.
func serveStalled(t *testing.T, srv *dispatch.Server, serve func(*dispatch.Server, net.Conn, func(io.ReadWriteCloser) rpc.ServerCodec), newCodec func(io.ReadWriteCloser) rpc.ServerCodec, client func(io.ReadWriteCloser) *rpc.Client, hold int, trickle time.Duration) (*rpc.Call, <-chan struct{}) {
	t.Helper()
	cc, ended := servePipeConn(srv, serve, newCodec)
	c := client(conntest.NewHoldBack(cc, hold, trickle))
	t.Cleanup(func() { c.Close() })
	call := c.Go("Arith.EchoBlob", &Blob{Data: make([]byte, 64)}, new(Blob), make(chan *rpc.Call, 1))
	return call, ended
}

// TestServeConnIdleStalledRequest: with WithIdleTimeout(2s), a connection
// whose client stopped after its request's header, or trickles its body a
// byte every 250 ms, is closed by the idle timeout — between the timeout
// and 9/8 of it — as is one cut before its header is whole; its call fails.
// It was held open for ever: the call counted as in flight from its
// header on.
func TestServeConnIdleStalledRequest(t *testing.T) {
	const idle = 2 * time.Second
	for _, nc := range netrpcClients {
		for _, sc := range stalledCases {
			t.Run(nc.name+"/"+sc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := arithServer(t, nil, dispatch.WithIdleTimeout(idle))
					start := time.Now()
					call, ended := serveStalled(t, srv, serveConn, nc.codec, nc.client, sc.hold, sc.trickle)
					select {
					case <-ended:
					case <-time.After(10 * idle):
						t.Fatalf("a %s connection was still open %v after it stopped part way through a request", sc.name, 10*idle)
					}
					open := time.Since(start)
					t.Logf("%s %s connection with WithIdleTimeout(%v): closed after %v", sc.name, nc.name, idle, open)
					assert.GreaterOrEqual(t, open, idle, "closed before the idle timeout")
					assert.LessOrEqual(t, open, idle*9/8, "closed later than 9/8 of the idle timeout")
					<-call.Done
					assert.Error(t, call.Error, "the call of a connection closed part way through its request")
				})
			})
		}
	}
}

// TestServeConnShutdownStalledRequest: Shutdown with a connection open
// whose client stopped after its request's header (or half way through a
// JSON request) waits for the genuine call in flight on another
// connection, which is answered, and then returns at once, closing the
// stalled connection; through ServeConn and ServeCodec alike. It waited
// for the stalled one until its context ended, and then cut off every call
// still in flight.
func TestServeConnShutdownStalledRequest(t *testing.T) {
	serves := []struct {
		name  string
		serve func(*dispatch.Server, net.Conn, func(io.ReadWriteCloser) rpc.ServerCodec)
	}{{"ServeConn", serveConn}, {"ServeCodec", serveCodec}}
	for _, sv := range serves {
		for _, nc := range netrpcClients {
			t.Run(sv.name+"/"+nc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					a := newArith()
					srv := arithServer(t, a)
					releaseAtEnd(t, a)
					stalled, stalledEnded := serveStalled(t, srv, sv.serve, nc.codec, nc.client, 2, 0)
					cc, genuineEnded := servePipeConn(srv, sv.serve, nc.codec)
					c := nc.client(cc)
					defer c.Close()
					var out Blob
					held := c.Go("Arith.SlowEcho", &Delayed{Delay: 3_600_000, Data: []byte{7}}, &out, make(chan *rpc.Call, 1))
					<-a.echoStarted
					synctest.Wait() // the stalled request's start is read

					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					start := time.Now()
					shut := make(chan error, 1)
					go func() { shut <- srv.Shutdown(ctx) }()
					synctest.Wait()
					select {
					case err := <-shut:
						t.Fatalf("Shutdown returned with a call in flight: %v", err)
					default:
					}
					a.echoRelease <- struct{}{}
					<-held.Done
					require.NoError(t, held.Error, "the genuine call in flight")
					assert.Equal(t, []byte{7}, out.Data)

					err := <-shut
					took := time.Since(start)
					t.Logf("Shutdown with a stalled %s connection open: returned %v after it began, %v", nc.name, took, err)
					require.NoError(t, err, "Shutdown with a stalled connection open")
					assert.Zero(t, took, "Shutdown waited for a request that had not arrived")
					<-stalledEnded
					<-genuineEnded
					<-stalled.Done
					assert.Error(t, stalled.Error, "the stalled call")
				})
			})
		}
	}
}
