package dispatch_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
)

// serveJSONRPC serves srv to JSON-RPC 1.0 clients of the standard library
// on a loopback listener and returns the address (serveNetRPC).
func serveJSONRPC(t *testing.T, srv *dispatch.Server) string {
	return serveNetRPC(t, srv, func(c net.Conn) rpc.ServerCodec { return jsonrpc.NewServerCodec(c) })
}

// serveNetRPC serves srv on a loopback listener, one ServeCodec per
// connection with the codec newCodec makes, and returns the address. The
// listener closes, and every ServeCodec has returned, when the test ends.
func serveNetRPC(t testing.TB, srv *dispatch.Server, newCodec func(net.Conn) rpc.ServerCodec) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeCodec(newCodec(conn)) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		srv.Close()
		wg.Wait()
	})
	return l.Addr().String()
}

func jsonClient(t *testing.T, addr string) *rpc.Client {
	t.Helper()
	c, err := jsonrpc.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestServeCodecJSONRPC calls a dispatch Server with the standard library's
// JSON-RPC client: results, a handler's errors as their Message, net/rpc's
// words for unknown names, the panic rule, and the CallInfo a handler sees.
func TestServeCodecJSONRPC(t *testing.T) {
	var mu sync.Mutex
	var seen []dispatch.CallInfo
	srv := dispatch.NewServer(dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		if ci, ok := dispatch.CallInfoFrom(ctx); ok {
			mu.Lock()
			seen = append(seen, ci)
			mu.Unlock()
		}
		return next(ctx, args, reply)
	}))
	require.NoError(t, srv.RegisterName("Arith", newArith()))
	require.NoError(t, dispatch.HandleStream(srv, "Feed.Count", func(ctx context.Context, s *dispatch.ServerStream[Args, int]) error { return nil }))
	c := jsonClient(t, serveJSONRPC(t, srv))

	var n int
	require.NoError(t, c.Call("Arith.Multiply", Args{6, 7}, &n))
	assert.Equal(t, 42, n)

	errText := func(method string) string {
		var r Reply
		err := c.Call(method, Args{1, 2}, &r)
		var se rpc.ServerError
		require.True(t, errors.As(err, &se), "%s: %v", method, err)
		return string(se)
	}
	assert.Equal(t, "arith: boom", errText("Arith.Fail"))
	assert.Equal(t, "arith: custom failure", errText("Arith.FailCode"))
	assert.Equal(t, "bank: insufficient funds", errText("Arith.Sentinel"))
	assert.Equal(t, "rpc: can't find method Arith.Nope", errText("Arith.Nope"))
	assert.Equal(t, "rpc: can't find service Nope.Nope", errText("Nope.Nope"))
	assert.Equal(t, "rpc: service/method request ill-formed: Nope", errText("Nope"))
	assert.Equal(t, "dispatch: panic in Arith.Panic: kaboom", errText("Arith.Panic"))
	assert.Equal(t, "dispatch: Feed.Count is a streaming method; call it with OpenStream or CallStream", errText("Feed.Count"))

	// Arguments of the wrong type are refused, and the connection goes on.
	var s string
	err := c.Call("Arith.Multiply", "six", &s)
	var se rpc.ServerError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Contains(t, string(se), "dispatch: decoding arguments of Arith.Multiply: ")
	require.NoError(t, c.Call("Arith.Multiply", Args{2, 3}, &n))
	assert.Equal(t, 6, n)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for _, ci := range seen {
		assert.Equal(t, dispatch.PathNetRPC, ci.Path)
	}
	assert.Equal(t, "Arith.Multiply", seen[0].Method)
}

// TestServeCodecConcurrent makes many calls at once on one JSON-RPC
// connection: each gets its own reply.
func TestServeCodecConcurrent(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, srv.RegisterName("Arith", newArith()))
	c := jsonClient(t, serveJSONRPC(t, srv))
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			var n int
			if assert.NoError(t, c.Call("Arith.Multiply", Args{i, 3}, &n)) {
				assert.Equal(t, i*3, n)
			}
		})
	}
	wg.Wait()
}

// TestServeCodecCallLimit refuses a call past WithMaxCallsPerConn with the
// zerodial wire's words, and serves calls again once the first is done.
func TestServeCodecCallLimit(t *testing.T) {
	srv := dispatch.NewServer(dispatch.WithMaxCallsPerConn(1))
	a := newArith()
	require.NoError(t, srv.RegisterName("Arith", a))
	c := jsonClient(t, serveJSONRPC(t, srv))

	var first Blob
	held := c.Go("Arith.SlowEcho", &Delayed{Delay: 60_000, Data: []byte{5}}, &first, nil)
	<-a.echoStarted
	var n int
	err := c.Call("Arith.Multiply", Args{2, 3}, &n)
	var se rpc.ServerError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "dispatch: too many calls in flight on this connection (limit 1)", string(se))
	a.echoRelease <- struct{}{}
	<-held.Done
	require.NoError(t, held.Error)
	// The first call counts until its reply is written, which its caller
	// may read a moment before the count is let go.
	require.Eventually(t, func() bool { return c.Call("Arith.Multiply", Args{2, 3}, &n) == nil }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 6, n)
}

// TestServeCodecShutdown: once Shutdown has begun, a new call is refused
// with "dispatch: server is shutting down", the call in flight finishes and
// is answered, and then the connection closes (rpc.ErrShutdown).
func TestServeCodecShutdown(t *testing.T) {
	srv := dispatch.NewServer()
	a := newArith()
	require.NoError(t, srv.RegisterName("Arith", a))
	c := jsonClient(t, serveJSONRPC(t, srv))

	var first Blob
	held := c.Go("Arith.SlowEcho", &Delayed{Delay: 60_000, Data: []byte{5}}, &first, nil)
	<-a.echoStarted
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()

	require.Eventually(t, func() bool {
		var n int
		err := c.Call("Arith.Multiply", Args{2, 3}, &n)
		var se rpc.ServerError
		return errors.As(err, &se) && string(se) == "dispatch: server is shutting down"
	}, 5*time.Second, time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned with a call in flight: %v", err)
	default:
	}
	a.echoRelease <- struct{}{}
	<-held.Done
	require.NoError(t, held.Error)
	assert.Equal(t, []byte{5}, first.Data)
	require.NoError(t, <-shut)
	// The connection is closed when Shutdown returns, but the client may
	// not have read its end yet: a call sent first is failed by the
	// client's reader with io.ErrUnexpectedEOF, and every call after that
	// with rpc.ErrShutdown.
	var n int
	err := c.Call("Arith.Multiply", Args{2, 3}, &n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = c.Call("Arith.Multiply", Args{2, 3}, &n)
	}
	assert.ErrorIs(t, err, rpc.ErrShutdown)
}

// TestServeCodecClose: Close ends the connection at once; the handler's
// context ends, and ServeCodec returns.
func TestServeCodecClose(t *testing.T) {
	srv := dispatch.NewServer()
	a := newArith()
	require.NoError(t, srv.RegisterName("Arith", a))
	client, server := net.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeCodec(jsonrpc.NewServerCodec(server))
	}()
	c := jsonrpc.NewClient(client)
	defer c.Close()
	var n int
	call := c.Go("Arith.Block", Args{}, &n, nil)
	<-a.started
	require.NoError(t, srv.Close())
	assert.ErrorIs(t, <-a.canceled, context.Canceled)
	<-served
	<-call.Done
	assert.Error(t, call.Error)
}

// TestServeCodecAfterClose closes the codec of a Server that is closed.
func TestServeCodecAfterClose(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, srv.Close())
	client, server := net.Pipe()
	defer client.Close()
	srv.ServeCodec(jsonrpc.NewServerCodec(server))
	_, err := server.Write([]byte("x"))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
}

// TestServeCodecGob calls a dispatch Server with the standard library's
// own client, rpc.Dial (gob over TCP), through gobrpc's server codec: a
// result, a handler's error, net/rpc's words for an unknown method, and
// the connection's addresses in the handler's CallInfo.
func TestServeCodecGob(t *testing.T) {
	remote := make(chan net.Addr, 1)
	srv := dispatch.NewServer(dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		if ci, ok := dispatch.CallInfoFrom(ctx); ok && ci.Path == dispatch.PathNetRPC {
			select {
			case remote <- ci.RemoteAddr:
			default:
			}
		}
		return next(ctx, args, reply)
	}))
	require.NoError(t, srv.RegisterName("Arith", newArith()))
	addr := serveNetRPC(t, srv, func(c net.Conn) rpc.ServerCodec { return gobrpc.NewServerCodec(c) })
	c, err := rpc.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()

	var n int
	require.NoError(t, c.Call("Arith.Multiply", Args{6, 7}, &n))
	assert.Equal(t, 42, n)
	peer := <-remote
	require.NotNil(t, peer)
	assert.Equal(t, "tcp", peer.Network())

	var r Reply
	assert.Equal(t, rpc.ServerError("arith: boom"), c.Call("Arith.Fail", Args{}, &r))
	assert.Equal(t, rpc.ServerError("rpc: can't find method Arith.Nope"), c.Call("Arith.Nope", Args{}, &r))
	require.NoError(t, c.Call("Arith.Multiply", Args{2, 3}, &n))
	assert.Equal(t, 6, n)
}
