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

// ServeConn's tests: the calls of the standard library's clients served as
// by ServeCodec, and the wire's limits on their connection.

func jsonConnCodec(c io.ReadWriteCloser) rpc.ServerCodec { return jsonrpc.NewServerCodec(c) }
func gobConnCodec(c io.ReadWriteCloser) rpc.ServerCodec  { return gobrpc.NewServerCodec(c) }

// netrpcClients are the standard library's two clients and the ServeConn
// codec each speaks to.
var netrpcClients = []struct {
	name   string
	codec  func(io.ReadWriteCloser) rpc.ServerCodec
	client func(io.ReadWriteCloser) *rpc.Client
}{
	{"gob", gobConnCodec, rpc.NewClient},
	{"jsonrpc", jsonConnCodec, jsonrpc.NewClient},
}

// connServer is srv served by ServeConn on a loopback listener.
type connServer struct {
	addr  string
	ended chan struct{} // a value each time a ServeConn returns
}

// serveConns serves srv on a loopback listener, one ServeConn per
// connection with the codec newCodec makes. The listener closes, and every
// ServeConn has returned, when the test ends.
func serveConns(t *testing.T, srv *dispatch.Server, newCodec func(io.ReadWriteCloser) rpc.ServerCodec) *connServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cs := &connServer{addr: l.Addr().String(), ended: make(chan struct{}, 64)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				srv.ServeConn(conn, newCodec)
				cs.ended <- struct{}{}
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		srv.Close()
		wg.Wait()
	})
	return cs
}

// dial connects a client of the standard library to cs; the test closes it
// when it ends.
func (cs *connServer) dial(t *testing.T, client func(io.ReadWriteCloser) *rpc.Client) *rpc.Client {
	t.Helper()
	conn, err := net.Dial("tcp", cs.addr)
	require.NoError(t, err)
	c := client(conn)
	t.Cleanup(func() { c.Close() })
	return c
}

// assertServesConns checks that srv serves new connections of both
// standard clients through ServeConn, and that ServeConn returns when each
// hangs up.
func assertServesConns(t *testing.T, srv *dispatch.Server) {
	t.Helper()
	for _, nc := range netrpcClients {
		cc, sc := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeConn(sc, nc.codec)
		}()
		client := nc.client(cc)
		var n int
		err := callWithin(client, "Arith.Multiply", Args{6, 7}, &n)
		client.Close()
		recv(t, done, waitLong, "ServeConn's return for a new "+nc.name+" client")
		if assert.NoError(t, err, "a new %s client", nc.name) {
			assert.Equal(t, 42, n, "a new %s client", nc.name)
		}
	}
}

// releaseAtEnd lets a's SlowEcho go on when the test ends, before its
// Server closes, should the test fail before it does: the handler does not
// look at its context, and Close would wait for it.
func releaseAtEnd(t *testing.T, a *Arith) {
	t.Cleanup(func() {
		select {
		case a.echoRelease <- struct{}{}:
		default:
		}
	})
}

// serverErr returns the text of err, an rpc.ServerError, or fails.
func serverErr(t *testing.T, err error) string {
	t.Helper()
	var se rpc.ServerError
	require.True(t, errors.As(err, &se), "want an rpc.ServerError, got %v", err)
	return string(se)
}

// TestServeConnServes: both standard clients are served through ServeConn
// as through ServeCodec — results, errors, net/rpc's words — and the
// handler's CallInfo has the connection's addresses, which jsonrpc's codec
// cannot tell.
func TestServeConnServes(t *testing.T) {
	for _, nc := range netrpcClients {
		t.Run(nc.name, func(t *testing.T) {
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
			c := serveConns(t, srv, nc.codec).dial(t, nc.client)

			var n int
			require.NoError(t, callWithin(c, "Arith.Multiply", Args{6, 7}, &n))
			assert.Equal(t, 42, n)
			peer := recv(t, remote, waitLong, "the CallInfo")
			require.NotNil(t, peer)
			assert.Equal(t, "tcp", peer.Network())
			var r Reply
			assert.Equal(t, "arith: boom", serverErr(t, callWithin(c, "Arith.Fail", Args{}, &r)))
			assert.Equal(t, "rpc: can't find method Arith.Nope", serverErr(t, callWithin(c, "Arith.Nope", Args{}, &r)))
			assert.Equal(t, "dispatch: panic in Arith.Panic: kaboom", serverErr(t, callWithin(c, "Arith.Panic", Args{}, &n)))
			require.NoError(t, callWithin(c, "Arith.Multiply", Args{2, 3}, &n))
			assert.Equal(t, 6, n)
		})
	}
}

// TestServeConnShutdown: as with ServeCodec, once Shutdown has begun a new
// call is refused with "dispatch: server is shutting down", the call in
// flight finishes and is answered, and then the connection closes.
func TestServeConnShutdown(t *testing.T) {
	for _, nc := range netrpcClients {
		t.Run(nc.name, func(t *testing.T) {
			a := newArith()
			srv := arithServer(t, a)
			cs := serveConns(t, srv, nc.codec)
			releaseAtEnd(t, a)
			c := cs.dial(t, nc.client)

			var first Blob
			held := c.Go("Arith.SlowEcho", &Delayed{Delay: 60_000, Data: []byte{5}}, &first, nil)
			recv(t, a.echoStarted, waitLong, "the slow call")
			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(context.Background()) }()
			require.Eventually(t, func() bool {
				var n int
				err := callWithin(c, "Arith.Multiply", Args{2, 3}, &n)
				var se rpc.ServerError
				return errors.As(err, &se) && string(se) == "dispatch: server is shutting down"
			}, waitLong, time.Millisecond)
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned with a call in flight: %v", err)
			default:
			}
			a.echoRelease <- struct{}{}
			recv(t, held.Done, waitLong, "the slow call's answer")
			require.NoError(t, held.Error)
			assert.Equal(t, []byte{5}, first.Data)
			require.NoError(t, recv(t, shut, waitLong, "Shutdown's return"))
			recv(t, cs.ended, waitLong, "ServeConn's return")
		})
	}
}

// TestServeConnClose: Close ends the connection at once; the handler's
// context ends, and ServeConn returns. On a closed Server, ServeConn
// closes the connection it is given.
func TestServeConnClose(t *testing.T) {
	a := newArith()
	srv := arithServer(t, a)
	client, server := net.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeConn(server, jsonConnCodec)
	}()
	c := jsonrpc.NewClient(client)
	defer c.Close()
	var n int
	call := c.Go("Arith.Block", Args{}, &n, nil)
	recv(t, a.started, waitLong, "the blocking call")
	require.NoError(t, srv.Close())
	assert.ErrorIs(t, recv(t, a.canceled, waitLong, "the handler's end"), context.Canceled)
	recv(t, served, waitLong, "ServeConn's return")
	recv(t, call.Done, waitLong, "the call's end")
	assert.Error(t, call.Error)

	client, server = net.Pipe()
	defer client.Close()
	srv.ServeConn(server, jsonConnCodec)
	_, err := server.Write([]byte("x"))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
}
