package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/resolver"
)

// dialLegacy returns a Client of s over the codec newCodec makes, closed
// when the test ends.
func dialLegacy(t *testing.T, addr string, newCodec func(io.ReadWriteCloser) rpc.ClientCodec, opts ...dispatch.ClientOption) *dispatch.Client {
	t.Helper()
	c, err := dispatch.DialCodec(t.Context(), nil, "tcp", addr, newCodec, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCodecClientStdlib calls the standard library's rpc.Server, with gob
// and with JSON-RPC, through a dispatch Client: results, a handler's error
// as an *Error with its text, the codes of net/rpc's refusals, the nil
// rule, Go, and the CallInfo its interceptors see.
func TestCodecClientStdlib(t *testing.T) {
	for _, k := range netRPCKinds {
		t.Run(k.name, func(t *testing.T) {
			s := startLegacy(t, "one", k.serve)
			var mu sync.Mutex
			var seen []dispatch.CallInfo
			c := dialLegacy(t, s.addr, k.newCodec, dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
				ci, ok := dispatch.CallInfoFrom(ctx)
				require.True(t, ok)
				mu.Lock()
				seen = append(seen, ci)
				mu.Unlock()
				return next(ctx, args, reply)
			}))
			ctx := t.Context()

			var n int
			require.NoError(t, c.Call(ctx, "Legacy.Multiply", Args{6, 7}, &n))
			assert.Equal(t, 42, n)
			r := Reply{X: 99, S: "old"}
			require.NoError(t, c.Call(ctx, "Legacy.Fill", Args{3, 4}, &r))
			assert.Equal(t, Reply{X: 3, S: "filled", List: []int{3, 4}}, r)

			// A handler's error: an *Error with its text, CodeUnknown, and
			// the reply left zero.
			n = 5
			err := c.Call(ctx, "Legacy.Fail", Args{1, 2}, &n)
			var de *dispatch.Error
			require.True(t, errors.As(err, &de), "%v", err)
			assert.Equal(t, dispatch.Error{Code: dispatch.CodeUnknown, Message: "legacy: refused"}, *de)
			assert.Equal(t, 0, n)

			// net/rpc's refusals, with the codes dispatch gives them on its
			// own wire.
			for _, tc := range []struct {
				method, msg string
				code        dispatch.Code
			}{
				{"Legacy.Nope", "rpc: can't find method Legacy.Nope", dispatch.CodeNotFound},
				{"Nope.Nope", "rpc: can't find service Nope.Nope", dispatch.CodeNotFound},
				{"Nope", "rpc: service/method request ill-formed: Nope", dispatch.CodeInvalidArgument},
			} {
				err := c.Call(ctx, tc.method, Args{}, &n)
				require.True(t, errors.As(err, &de), "%s: %v", tc.method, err)
				assert.Equal(t, dispatch.Error{Code: tc.code, Message: tc.msg}, *de, tc.method)
			}

			// The nil rule, as on every path.
			assert.ErrorIs(t, c.Call(ctx, "Legacy.Multiply", Args{1, 1}, nil), dispatch.ErrNilReply)
			assert.ErrorIs(t, c.Call(ctx, "Legacy.Multiply", Args{1, 1}, (*int)(nil)), dispatch.ErrNilReply)
			assert.ErrorIs(t, c.Call(ctx, "Legacy.Multiply", Args{1, 1}, n), dispatch.ErrNilReply)

			// Go.
			var g int
			call := c.Go(ctx, "Legacy.Multiply", Args{5, 5}, &g, nil)
			done := recv(t, call.Done, waitLong, "the Call")
			require.NoError(t, done.Error)
			assert.Equal(t, 25, g)

			// The connection still works after every refusal.
			require.NoError(t, c.Call(ctx, "Legacy.Multiply", Args{2, 3}, &n))
			assert.Equal(t, 6, n)

			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, seen)
			assert.Equal(t, "Legacy.Multiply", seen[0].Method)
			for _, ci := range seen {
				assert.Equal(t, dispatch.PathNetRPC, ci.Path)
				require.NotNil(t, ci.RemoteAddr)
				assert.Equal(t, "tcp", ci.RemoteAddr.Network())
				assert.Equal(t, s.addr, ci.RemoteAddr.String())
				assert.Nil(t, ci.LocalAddr)
			}
		})
	}
}

// TestCodecClientContextEnds: a call whose context ends returns at once,
// with the context's *Error, while the server's handler is still blocked;
// the server's late reply is read and dropped, and the caller's reply stays
// zero (under -race, any write to it after Call returned is a race).
func TestCodecClientContextEnds(t *testing.T) {
	for _, k := range netRPCKinds {
		t.Run(k.name, func(t *testing.T) {
			s := startLegacy(t, "one", k.serve)
			conn, err := net.Dial("tcp", s.addr)
			require.NoError(t, err)
			codec := &recordingCodec{ClientCodec: k.newCodec(conn), bodies: make(chan any, 16)}
			c, err := dispatch.NewCodecClient(codec)
			require.NoError(t, err)
			defer c.Close()

			var replies []*int
			for _, tc := range []struct {
				name    string
				timeout bool // the deadline passes; else the test cancels
				want    error
			}{
				{"canceled", false, context.Canceled},
				{"deadline", true, context.DeadlineExceeded},
			} {
				var ctx context.Context
				var cancel context.CancelFunc
				if tc.timeout {
					e := newExpiring(t.Context())
					ctx, cancel = e, e.expire
				} else {
					ctx, cancel = context.WithCancel(t.Context())
				}
				reply := new(int)
				replies = append(replies, reply)
				errc := callAsync(c, ctx, "Legacy.Block", Args{A: 11}, reply)
				recv(t, s.svc.entered, waitLong, "the handler")
				cancel() // or the deadline passes
				err := recv(t, errc, waitLong, "the call whose context ended")
				var de *dispatch.Error
				require.True(t, errors.As(err, &de), "%s: %v", tc.name, err)
				assert.ErrorIs(t, err, tc.want)
				assert.Equal(t, 0, *reply)
				cancel()
				// The handler is still blocked: no body has been read.
				select {
				case b := <-codec.bodies:
					t.Fatalf("%s: a body was read while the handler was blocked: %v", tc.name, b)
				default:
				}
			}
			// Let the handlers answer: their replies are read, into nothing.
			s.svc.free()
			for range 2 {
				assert.Nil(t, recv(t, codec.bodies, waitLong, "a late reply's body"), "a late reply was decoded")
			}
			for _, r := range replies {
				assert.Equal(t, 0, *r, "a late reply was written into its caller's reply")
			}
			// The connection goes on, and a call gets its own reply.
			var n int
			require.NoError(t, c.Call(t.Context(), "Legacy.Multiply", Args{3, 3}, &n))
			assert.Equal(t, 9, n)
			assert.NotNil(t, recv(t, codec.bodies, waitLong, "the reply's body"))
		})
	}
}

// expiring is a context whose deadline passes when the test calls expire,
// once the handler is blocked, rather than on the clock: with a 100 ms
// timeout, a loaded machine could let it pass before the request was
// written, or while it was (which cuts the connection), and the handler
// was never entered.
type expiring struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	expire   func()
}

func newExpiring(parent context.Context) *expiring {
	e := &expiring{Context: parent, deadline: time.Now().Add(time.Hour), done: make(chan struct{})}
	e.expire = sync.OnceFunc(func() { close(e.done) })
	return e
}

func (e *expiring) Deadline() (time.Time, bool) { return e.deadline, true }
func (e *expiring) Done() <-chan struct{}       { return e.done }

func (e *expiring) Err() error {
	select {
	case <-e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestCodecClientLateReplyRace: many calls whose contexts end while their
// replies are on their way; none is written into a caller's reply after
// its Call has returned (-race), and a reply is either whole or zero.
func TestCodecClientLateReplyRace(t *testing.T) {
	s := startLegacy(t, "one", netRPCKinds[0].serve)
	c := dialLegacy(t, s.addr, netRPCKinds[0].newCodec)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(t.Context())
			var r Reply
			errc := callAsync(c, ctx, "Legacy.Fill", Args{i + 1, 2}, &r)
			cancel()
			err := <-errc
			got := r // read once Call has returned: a later write would race
			if err != nil {
				assert.ErrorIs(t, err, context.Canceled)
				assert.Equal(t, Reply{}, got)
				return
			}
			assert.Equal(t, Reply{X: i + 1, S: "filled", List: []int{i + 1, 2}}, got)
		})
	}
	wg.Wait()
	var n int
	require.NoError(t, c.Call(t.Context(), "Legacy.Multiply", Args{2, 2}, &n))
	assert.Equal(t, 4, n)
}

// TestCodecClientConcurrent makes 64 calls at once on one connection: each
// gets its own reply.
func TestCodecClientConcurrent(t *testing.T) {
	for _, k := range netRPCKinds {
		t.Run(k.name, func(t *testing.T) {
			s := startLegacy(t, "one", k.serve)
			c := dialLegacy(t, s.addr, k.newCodec)
			var wg sync.WaitGroup
			for i := range 64 {
				wg.Go(func() {
					var n int
					if assert.NoError(t, c.Call(t.Context(), "Legacy.Multiply", Args{i, i + 1}, &n)) {
						assert.Equal(t, i*(i+1), n)
					}
				})
			}
			wg.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			assert.Len(t, s.conns, 1, "the calls share one connection")
		})
	}
}

// TestCodecClientServerHangsUp: when the server closes the connection, the
// calls in flight fail with ErrShutdown, saying so; DialCodec's Client
// dials again on the next call, NewCodecClient's cannot.
func TestCodecClientServerHangsUp(t *testing.T) {
	for _, k := range netRPCKinds {
		t.Run(k.name, func(t *testing.T) {
			s := startLegacy(t, "one", k.serve)
			c := dialLegacy(t, s.addr, k.newCodec)
			var reply int
			errc := callAsync(c, t.Context(), "Legacy.Block", Args{A: 1}, &reply)
			recv(t, s.svc.entered, waitLong, "the handler")
			s.hangUp()
			err := recv(t, errc, waitLong, "the call in flight")
			require.ErrorIs(t, err, dispatch.ErrShutdown)
			assert.True(t, isConnFailure(err), "%v", err)
			assert.Equal(t, "Legacy.Block over netrpc: connection is shut down: the server closed the connection", err.Error())
			assert.Equal(t, 0, reply)

			var n int
			require.NoError(t, c.Call(t.Context(), "Legacy.Multiply", Args{4, 5}, &n), "the next call dials again")
			assert.Equal(t, 20, n)

			conn, err := net.Dial("tcp", s.addr)
			require.NoError(t, err)
			nc, err := dispatch.NewCodecClient(k.newCodec(conn))
			require.NoError(t, err)
			defer nc.Close()
			require.NoError(t, nc.Call(t.Context(), "Legacy.Multiply", Args{1, 5}, &n))
			errc2 := callAsync(nc, t.Context(), "Legacy.Block", Args{A: 1}, &reply)
			recv(t, s.svc.entered, waitLong, "the handler")
			s.hangUp()
			require.ErrorIs(t, recv(t, errc2, waitLong, "the call in flight"), dispatch.ErrShutdown)
			err = nc.Call(t.Context(), "Legacy.Multiply", Args{1, 5}, &n)
			require.ErrorIs(t, err, dispatch.ErrShutdown, "NewCodecClient's Client has nothing to dial")
			assert.Contains(t, err.Error(), "the server closed the connection")
		})
	}
}

// TestCodecClientClose: Close fails the calls in flight with ErrShutdown at
// once, while the server's handler still runs, and every later call.
func TestCodecClientClose(t *testing.T) {
	for _, k := range netRPCKinds {
		t.Run(k.name, func(t *testing.T) {
			s := startLegacy(t, "one", k.serve)
			c, err := dispatch.DialCodec(t.Context(), nil, "tcp", s.addr, k.newCodec)
			require.NoError(t, err)
			var reply int
			errc := callAsync(c, context.Background(), "Legacy.Block", Args{A: 1}, &reply)
			recv(t, s.svc.entered, waitLong, "the handler")
			require.NoError(t, c.Close())
			err = recv(t, errc, waitLong, "the call in flight")
			assert.EqualError(t, err, "Legacy.Block over netrpc: connection is shut down")
			assert.ErrorIs(t, err, dispatch.ErrShutdown)
			assert.Equal(t, 0, reply)
			err = c.Call(t.Context(), "Legacy.Multiply", Args{1, 1}, &reply)
			assert.EqualError(t, err, "Legacy.Multiply over netrpc: connection is shut down")
			assert.ErrorIs(t, err, dispatch.ErrShutdown)
			assert.Equal(t, dispatch.ErrShutdown, c.Close(), "Close's own error is ErrShutdown itself, as net/rpc's")
		})
	}
}

// TestCodecClientReplicas: a Client of two standard library servers
// (WithResolver) spreads its calls; once one is stopped, every call goes to
// the other. Who is idempotent, so that the one call that may find its
// replica's connection closed under it is tried on the other.
func TestCodecClientReplicas(t *testing.T) {
	kind := netRPCKinds[0]
	a := startLegacy(t, "a", kind.serve)
	b := startLegacy(t, "b", kind.serve)
	c := dialLegacy(t, a.addr+","+b.addr, kind.newCodec, dispatch.WithResolver(resolver.Static{}), dispatch.WithIdempotent("Legacy.Who"))
	who := func() (string, error) {
		var name string
		err := c.Call(t.Context(), "Legacy.Who", Args{}, &name)
		return name, err
	}
	seen := map[string]bool{}
	for range 20 {
		name, err := who()
		require.NoError(t, err)
		seen[name] = true
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true}, seen, "both replicas are called")

	a.stop()
	for i := range 20 {
		name, err := who()
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, "b", name)
	}
}

// TestCodecClientBadResponse: a codec that answers a call never made (an
// unknown Seq), or fails to read, fails the connection with an error that
// says so; nothing hangs.
func TestCodecClientBadResponse(t *testing.T) {
	codec := newScriptedCodec()
	c, err := dispatch.NewCodecClient(codec)
	require.NoError(t, err)
	defer c.Close()
	var n int
	errc := callAsync(c, t.Context(), "Legacy.Multiply", Args{2, 3}, &n)
	req := recv(t, codec.requests, waitLong, "the request")
	assert.Equal(t, "Legacy.Multiply", req.ServiceMethod)
	codec.responses <- rpc.Response{ServiceMethod: "Legacy.Multiply", Seq: req.Seq + 1000}
	err = recv(t, errc, waitLong, "the call")
	require.ErrorIs(t, err, dispatch.ErrShutdown)
	assert.True(t, isConnFailure(err))
	assert.Equal(t, fmt.Sprintf(`Legacy.Multiply over netrpc: connection is shut down: transport: protocol error: net/rpc response to a call never made or already answered (Seq %d, "Legacy.Multiply")`, req.Seq+1000), err.Error())
	// The call is failed first, then the codec closed, on the reader's way
	// out.
	recv(t, codec.closed, waitLong, "the close of the failed connection's codec")
	assert.ErrorIs(t, c.Call(t.Context(), "Legacy.Multiply", Args{2, 3}, &n), dispatch.ErrShutdown)

	// A read that fails: its error is the cause.
	codec = newScriptedCodec()
	c2, err := dispatch.NewCodecClient(codec)
	require.NoError(t, err)
	defer c2.Close()
	errc = callAsync(c2, t.Context(), "Legacy.Multiply", Args{2, 3}, &n)
	recv(t, codec.requests, waitLong, "the request")
	codec.responses <- errors.New("codec: garbled header")
	err = recv(t, errc, waitLong, "the call")
	require.ErrorIs(t, err, dispatch.ErrShutdown)
	assert.Equal(t, "Legacy.Multiply over netrpc: connection is shut down: codec: garbled header", err.Error())
}

// TestCodecClientWriteInterrupted: a server that stops reading blocks the
// write of a request. DialCodec's Client interrupts the write when the
// caller's context ends (a write deadline on the connection it dialled):
// the call returns the context's *Error, and the connection, which holds
// part of the request, ends; the next call dials again. NewCodecClient's
// Client cannot interrupt its codec: the call waits for the write, as with
// net/rpc, and Close ends it.
func TestCodecClientWriteInterrupted(t *testing.T) {
	var mu sync.Mutex
	var peers []net.Conn
	dials := 0
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mine, theirs := net.Pipe() // nobody reads theirs: a write blocks
		mu.Lock()
		defer mu.Unlock()
		peers = append(peers, theirs)
		dials++
		return mine, nil
	}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
	}()
	c, err := dispatch.DialCodec(t.Context(), dial, "pipe", "nobody", netRPCKinds[0].newCodec)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitShort)
	defer cancel()
	var n int
	err = c.Call(ctx, "Legacy.Multiply", Args{1, 2}, &n)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, dispatch.CodeDeadlineExceeded, codeOf(err), "%v", err)
	// The next call dials again, and is interrupted in turn.
	ctx2, cancel2 := context.WithCancel(t.Context())
	errc := callAsync(c, ctx2, "Legacy.Multiply", Args{1, 2}, &n)
	quiet(t, errc, "the call whose write is blocked")
	cancel2()
	assert.ErrorIs(t, recv(t, errc, waitLong, "the interrupted call"), context.Canceled)
	mu.Lock()
	assert.Equal(t, 2, dials)
	mu.Unlock()

	mine, theirs := net.Pipe()
	defer theirs.Close()
	nc, err := dispatch.NewCodecClient(netRPCKinds[1].newCodec(mine))
	require.NoError(t, err)
	ctx3, cancel3 := context.WithCancel(t.Context())
	errc = callAsync(nc, ctx3, "Legacy.Multiply", Args{1, 2}, &n)
	quiet(t, errc, "the call whose write is blocked")
	cancel3()
	quiet(t, errc, "the call whose write NewCodecClient cannot interrupt")
	require.NoError(t, nc.Close())
	assert.ErrorIs(t, recv(t, errc, waitLong, "the call Close ended"), context.Canceled)

	// Unless the codec has a SetWriteDeadline method.
	mine, theirs = net.Pipe()
	defer theirs.Close()
	dc, err := dispatch.NewCodecClient(deadlineCodec{netRPCKinds[1].newCodec(mine), mine})
	require.NoError(t, err)
	defer dc.Close()
	ctx4, cancel4 := context.WithCancel(t.Context())
	errc = callAsync(dc, ctx4, "Legacy.Multiply", Args{1, 2}, &n)
	quiet(t, errc, "the call whose write is blocked")
	cancel4()
	assert.ErrorIs(t, recv(t, errc, waitLong, "the interrupted call"), context.Canceled)
	err = dc.Call(t.Context(), "Legacy.Multiply", Args{1, 2}, &n)
	require.ErrorIs(t, err, dispatch.ErrShutdown, "the request was cut short: the connection is over")
	assert.Contains(t, err.Error(), "interrupted when its caller's context ended")
}

// deadlineCodec is a client codec that sets its connection's write
// deadline.
type deadlineCodec struct {
	rpc.ClientCodec
	conn net.Conn
}

func (c deadlineCodec) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// TestCodecClientWriteFails: arguments the codec cannot encode (gob: an
// Opaque, of register_test.go, has no exported field) end the
// connection (the codec may have written part of the request), with the
// codec's words; the next call dials again.
func TestCodecClientWriteFails(t *testing.T) {
	s := startLegacy(t, "one", netRPCKinds[0].serve)
	c := dialLegacy(t, s.addr, netRPCKinds[0].newCodec)
	var n int
	err := c.Call(t.Context(), "Legacy.Multiply", Opaque{}, &n)
	require.ErrorIs(t, err, dispatch.ErrShutdown)
	assert.True(t, isConnFailure(err))
	assert.Contains(t, err.Error(), "dispatch: writing the request of Legacy.Multiply: gob: type dispatch_test.Opaque has no exported fields")
	require.NoError(t, c.Call(t.Context(), "Legacy.Multiply", Args{3, 4}, &n))
	assert.Equal(t, 12, n)
}

// TestCodecClientNoStreams: net/rpc has no streams; opening one is refused
// with CodeUnimplemented.
func TestCodecClientNoStreams(t *testing.T) {
	s := startLegacy(t, "one", netRPCKinds[1].serve)
	c := dialLegacy(t, s.addr, netRPCKinds[1].newCodec)
	_, err := dispatch.OpenStream[int, int](t.Context(), c, "Legacy.Feed")
	assert.Equal(t, dispatch.CodeUnimplemented, codeOf(err), "%v", err)
	assert.EqualError(t, err, "dispatch: net/rpc has no streams: Legacy.Feed cannot be opened over a net/rpc codec")
	for _, err := range dispatch.CallStream[int, int](t.Context(), c, "Legacy.Feed", new(int)) {
		assert.Equal(t, dispatch.CodeUnimplemented, codeOf(err), "%v", err)
	}
}

// TestCodecClientOptions: the options that cannot apply over a net/rpc
// codec are refused, each named; so are a nil codec and a nil newCodec. A
// dial that fails is no *Error, and says what was dialled.
func TestCodecClientOptions(t *testing.T) {
	newCodec := netRPCKinds[1].newCodec
	_, err := dispatch.DialCodec(t.Context(), nil, "tcp", "127.0.0.1:1", newCodec, dispatch.WithShortcut(dispatch.ShortcutCopy), dispatch.WithCodec(codec.Msgpack))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dispatch: DialCodec with WithCodec: the rpc.ClientCodec encodes the calls")
	assert.Contains(t, err.Error(), "dispatch: DialCodec with WithShortcut(copy): a net/rpc server is not a dispatch Server of this process")

	mine, theirs := net.Pipe()
	defer theirs.Close()
	defer mine.Close()
	_, err = dispatch.NewCodecClient(newCodec(mine), dispatch.WithResolver(resolver.Static{}))
	assert.EqualError(t, err, "dispatch: NewCodecClient with WithResolver: a codec has one peer; use DialCodec")
	_, err = dispatch.NewCodecClient(nil)
	assert.EqualError(t, err, "dispatch: NewCodecClient with a nil rpc.ClientCodec")
	_, err = dispatch.DialCodec(t.Context(), nil, "tcp", "127.0.0.1:1", nil)
	assert.EqualError(t, err, "dispatch: DialCodec with a nil newCodec")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close() // nobody serves addr now
	_, err = dispatch.DialCodec(t.Context(), nil, "tcp", addr, newCodec)
	require.Error(t, err)
	assert.True(t, isConnFailure(err))
	assert.Contains(t, err.Error(), "dispatch: dial tcp "+addr+": ")
}

// TestCodecClientReplyMismatch: a reply that does not fit the caller's
// type is the caller's error, as on every path — not an *Error (the call
// succeeded), not the connection's failure — and the connection goes on.
func TestCodecClientReplyMismatch(t *testing.T) {
	for _, k := range netRPCKinds {
		t.Run(k.name, func(t *testing.T) {
			s := startLegacy(t, "one", k.serve)
			c := dialLegacy(t, s.addr, k.newCodec)
			var wrong string
			err := c.Call(t.Context(), "Legacy.Multiply", Args{2, 3}, &wrong)
			require.Error(t, err)
			assert.True(t, isConnFailure(err))
			assert.NotErrorIs(t, err, dispatch.ErrShutdown)
			assert.Contains(t, err.Error(), "dispatch: decoding reply of Legacy.Multiply: ")
			assert.Empty(t, wrong)
			var n int
			require.NoError(t, c.Call(t.Context(), "Legacy.Multiply", Args{2, 3}, &n))
			assert.Equal(t, 6, n)
		})
	}
}
