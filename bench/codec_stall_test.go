package bench

import (
	"context"
	"net"
	"net/rpc"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/conntest"
)

// HashiCorp's msgpackrpc client stopping part way through a request, its
// header whole, on a connection served by ServeConn: a request that has not
// wholly arrived is not a call in flight. In a synctest bubble, over
// net.Pipe: the times are the bubble's, exact whatever the machine's load.

// stalledMsgpack serves srv through ServeConn with msgpackrpc's server
// codec on one end of a net.Pipe, and starts a call of Compat.Describe from
// msgpackrpc's client on the other end, over a connection that holds back
// the last hold bytes of the request (its body's), trickled at the period
// given (0: never). It returns the call and a channel closed when
// ServeConn returns. The client is closed by its connection when the test
// ends: msgpackrpc's Close races its own reader (v2.0.0).
func stalledMsgpack(t *testing.T, srv *dispatch.Server, hold int, trickle time.Duration) (*rpc.Call, <-chan struct{}) {
	t.Helper()
	cc, sc := net.Pipe()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		srv.ServeConn(sc, msgpackrpc.NewServerCodec)
	}()
	conn := conntest.NewHoldBack(cc, hold, trickle)
	t.Cleanup(func() { conn.Close() })
	c := msgpackrpc.NewClient(conn)
	args := &Tagged{Name: strings.Repeat("x", 64)}
	return c.Go("Compat.Describe", args, new(Tagged), make(chan *rpc.Call, 1)), ended
}

// compatServer returns a Server of svc, closed when the test ends.
func compatServer(t *testing.T, svc *Compat, opts ...dispatch.ServerOption) *dispatch.Server {
	t.Helper()
	srv := dispatch.NewServer(opts...)
	if err := srv.RegisterName("Compat", svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestMsgpackRPCServeConnIdleStalled: with WithIdleTimeout(2s), a
// msgpackrpc connection that stopped after its request's header, or
// trickles its body a byte every 250 ms, is closed by the idle timeout,
// between the timeout and 9/8 of it, and its call fails. It was held open
// for ever: the call counted as in flight from its header on.
func TestMsgpackRPCServeConnIdleStalled(t *testing.T) {
	const idle = 2 * time.Second
	for _, tc := range []struct {
		name    string
		hold    int
		trickle time.Duration
	}{
		{"stalled", 2, 0},
		{"trickled", 48, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := compatServer(t, newCompat(), dispatch.WithIdleTimeout(idle))
				start := time.Now()
				call, ended := stalledMsgpack(t, srv, tc.hold, tc.trickle)
				select {
				case <-ended:
				case <-time.After(10 * idle):
					t.Fatalf("a %s msgpackrpc connection was still open %v after it stopped part way through a request", tc.name, 10*idle)
				}
				open := time.Since(start)
				t.Logf("%s msgpackrpc connection with WithIdleTimeout(%v): closed after %v", tc.name, idle, open)
				if open < idle || open > idle*9/8 {
					t.Errorf("closed after %v, want between %v and %v", open, idle, idle*9/8)
				}
				<-call.Done
				if call.Error == nil {
					t.Error("the call of a connection closed part way through its request succeeded")
				}
			})
		})
	}
}

// TestMsgpackRPCServeConnShutdownStalled: Shutdown with a msgpackrpc
// connection open that stopped after its request's header waits for the
// genuine call in flight on another msgpackrpc connection, which is
// answered, and then returns at once, closing the stalled connection. It
// waited for the stalled one until its context ended.
func TestMsgpackRPCServeConnShutdownStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newCompat()
		srv := compatServer(t, svc)
		stalled, stalledEnded := stalledMsgpack(t, srv, 2, 0)

		cc, sc := net.Pipe()
		genuineEnded := make(chan struct{})
		go func() {
			defer close(genuineEnded)
			srv.ServeConn(sc, msgpackrpc.NewServerCodec)
		}()
		defer cc.Close()
		c := msgpackrpc.NewClient(cc)
		var held Product
		call := c.Go("Compat.Hold", &Args{A: 5}, &held, make(chan *rpc.Call, 1))
		<-svc.started
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
		svc.release <- struct{}{}
		<-call.Done
		if call.Error != nil || held.P != 5 {
			t.Fatalf("the genuine call in flight: %d, %v", held.P, call.Error)
		}
		err := <-shut
		took := time.Since(start)
		t.Logf("Shutdown with a stalled msgpackrpc connection open: returned %v after it began, %v", took, err)
		if err != nil || took != 0 {
			t.Errorf("Shutdown with a stalled connection open returned %v after it began, %v; want at once, nil", took, err)
		}
		<-stalledEnded
		<-genuineEnded
		<-stalled.Done
		if stalled.Error == nil {
			t.Error("the stalled call succeeded")
		}
	})
}
