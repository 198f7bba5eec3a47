package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/transporttest"
)

// StdArith is served by the standard library's rpc.Server, which takes only
// methods of net/rpc's shape (no context).
type StdArith struct {
	hold chan struct{} // Hold waits on it
}

func (s *StdArith) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (s *StdArith) Fail(args Args, reply *int) error { return errors.New("arith: boom") }

func (s *StdArith) Hold(args Args, reply *int) error {
	<-s.hold
	*reply = args.A
	return nil
}

// serveStdlib serves rcvr under the name "Arith" with the standard
// library's rpc.Server over a new listener of tr, one ServeCodec per socket,
// and returns the listener's address.
func serveStdlib(t *testing.T, tr transport.Transport, listen string, rcvr any) string {
	srv := rpc.NewServer()
	require.NoError(t, srv.RegisterName("Arith", rcvr))
	l, err := tr.Listen(listen)
	require.NoError(t, err)
	transporttest.Serve(t, l, func(s transport.Socket) {
		srv.ServeCodec(codec.NewServerCodec(s))
	})
	return l.Addr().String()
}

// stdClient is the standard library's rpc.Client over a socket dialled with
// tr itself.
func stdClient(t *testing.T, tr transport.Transport, addr string) *rpc.Client {
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	c := rpc.NewClientWithCodec(codec.NewClientCodec(sock))
	t.Cleanup(func() { c.Close() })
	return c
}

// netRPCWording returns the error text the standard library's own server
// gives for a call of method, so the test compares with net/rpc itself
// rather than with a copy of its strings.
func netRPCWording(t *testing.T, tr transport.Transport, listen, method string) string {
	addr := serveStdlib(t, tr, listen, &StdArith{})
	var reply int
	err := stdClient(t, tr, addr).Call(method, Args{}, &reply)
	var se rpc.ServerError
	require.ErrorAs(t, err, &se)
	return string(se)
}

// The standard library's rpc.Client, over a socket of any transport, calls
// a dispatch.Server: the wire format is the same, and the server's router,
// interceptors and error wording apply.
func TestStdlibClientCallsDispatchServer(t *testing.T) {
	for _, tt := range transports {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.make(t)
			srv, _, rec := newServer(t)
			addr := serve(t, srv, tr, tt.listen)
			c := stdClient(t, tr, addr)

			var n int
			require.NoError(t, c.Call("Arith.Multiply", Args{6, 7}, &n))
			assert.Equal(t, 42, n)
			assert.Equal(t, []string{
				"outer> Arith.Multiply *dispatch_test.Args {A:6 B:7} md=map[]",
				"inner> Arith.Multiply *dispatch_test.Args {A:6 B:7} md=map[]",
				"<inner *int err=<nil>",
				"<outer *int err=<nil>",
			}, rec.take(), "the interceptor chain runs for a net/rpc caller")

			require.NoError(t, c.Call("Gen.Add", &Args{2, 3}, &n))
			assert.Equal(t, 5, n)

			var r Reply
			err := c.Call("Arith.Fail", Args{}, &r)
			assert.Equal(t, rpc.ServerError("arith: boom"), err)
			err = c.Call("Arith.FailCode", Args{}, &n)
			assert.Equal(t, rpc.ServerError("arith: custom failure"), err)

			for _, m := range []string{"Arith.Nope", "Nope.Multiply", "ArithMultiply"} {
				err = c.Call(m, Args{}, &n)
				assert.Equal(t, rpc.ServerError(netRPCWording(t, tr, tt.listen, m)), err, m)
			}

			// Concurrent calls on one rpc.Client: each gets its own reply.
			multiplyConcurrently(t, func(a Args, r *int) error { return c.Call("Arith.Multiply", a, r) })
			// The client still works after all that.
			require.NoError(t, c.Call("Arith.Multiply", Args{3, 3}, &n))
			assert.Equal(t, 9, n)
		})
	}
}

// The reverse works too: the standard library's rpc.Server echoes Seq and
// Service-Method and reports errors in the Error header, which is all a
// dispatch.Client needs. What net/rpc does not know (Error-Code, Timeout,
// Md-*) it ignores, so errors arrive with CodeUnknown; it cannot stop a
// call, so a cancelled call's handler runs on and its late reply must be
// dropped, never taken for the reply to a later call on the connection.
func TestDispatchClientCallsStdlibServer(t *testing.T) {
	for _, tt := range transports {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.make(t)
			svc := &StdArith{hold: make(chan struct{})}
			addr := serveStdlib(t, tr, tt.listen, svc)
			var holdOnce sync.Once
			release := func() { holdOnce.Do(func() { close(svc.hold) }) }
			t.Cleanup(release)
			c, err := dispatch.Dial(context.Background(), tr, addr)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })

			n := 99
			require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{6, 7}, &n))
			assert.Equal(t, 42, n)

			n = 99
			err = c.Call(context.Background(), "Arith.Fail", Args{}, &n)
			assert.Equal(t, &dispatch.Error{Code: dispatch.CodeUnknown, Message: "arith: boom"}, err)
			assert.Zero(t, n, "a failed call leaves the reply zero")

			err = c.Call(context.Background(), "Arith.Nope", Args{}, &n)
			assert.Equal(t, &dispatch.Error{Code: dispatch.CodeUnknown, Message: "rpc: can't find method Arith.Nope"}, err,
				"net/rpc's own wording, without a code")

			// A call cancelled while net/rpc holds it.
			ctx, cancel := context.WithCancel(context.Background())
			errc := callAsync(c, ctx, "Arith.Hold", Args{A: 1}, new(int))
			quiet(t, errc, "the held call's return")
			cancel()
			err = recv(t, errc, waitLong, "the cancelled call")
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, dispatch.CodeCanceled, codeOf(err))
			release()

			// The connection survived the Cancel message; concurrent calls
			// each get their own reply.
			multiplyConcurrently(t, func(a Args, r *int) error { return c.Call(context.Background(), "Arith.Multiply", a, r) })

			// A deadline is not sent to net/rpc, but the caller's own
			// deadline still ends its call.
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			svc2 := &StdArith{hold: make(chan struct{})}
			addr2 := serveStdlib(t, tr, tt.listen, svc2)
			t.Cleanup(func() { close(svc2.hold) })
			c2, err := dispatch.Dial(context.Background(), tr, addr2)
			require.NoError(t, err)
			t.Cleanup(func() { c2.Close() })
			err = c2.Call(ctx, "Arith.Hold", Args{}, new(int))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

// multiplyConcurrently makes 32 goroutines × 16 calls of Arith.Multiply
// through call, and fails the test for any error or wrong product.
func multiplyConcurrently(t *testing.T, call func(args Args, reply *int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := range 32 {
		wg.Go(func() {
			for i := range 16 {
				var got int
				if err := call(Args{g, i}, &got); err != nil {
					errs <- err
					return
				}
				if got != g*i {
					errs <- fmt.Errorf("%d*%d: got %d", g, i, got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
