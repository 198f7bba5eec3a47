package dispatch_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/rpc"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
	"github.com/zerodial/transport/memory"
)

func gobClientCodec(c io.ReadWriteCloser) rpc.ClientCodec { return gobrpc.NewClientCodec(c) }

// serveGob serves srv through ServeCodec with gobrpc's server codec on a
// loopback listener, and returns the address.
func serveGob(t *testing.T, srv *dispatch.Server) string {
	return serveNetRPC(t, srv, func(c net.Conn) rpc.ServerCodec { return gobrpc.NewServerCodec(c) })
}

// TestCodecClientDispatchServer: a dispatch Client calls a dispatch
// Server's ServeCodec, gob at both ends. The refusals read as they do on
// zerodial's wire (the same *Error, code included); a handler's own code is
// lost (net/rpc carries text), except for an *Error with no message;
// neither metadata nor the deadline reach the handler, and the caller's
// capture of the reply's metadata receives none.
func TestCodecClientDispatchServer(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, srv.RegisterName("Arith", newArith()))
	require.NoError(t, dispatch.Handle(srv, "Bare.Code", func(ctx context.Context, _ *Args, _ *int) error {
		return &dispatch.Error{Code: dispatch.CodeAborted}
	}))
	require.NoError(t, dispatch.HandleStream(srv, "Feed.Count", func(ctx context.Context, s *dispatch.ServerStream[Args, int]) error { return nil }))
	c := dialLegacy(t, serveGob(t, srv), gobClientCodec)

	tr := memory.New()
	l, err := tr.Listen("arith")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	wire, err := dispatch.Dial(t.Context(), tr, "arith")
	require.NoError(t, err)
	defer wire.Close()

	ctx := t.Context()
	var n int
	require.NoError(t, c.Call(ctx, "Arith.Multiply", Args{6, 7}, &n))
	assert.Equal(t, 42, n)

	// The same *Error as on zerodial's wire.
	for _, method := range []string{"Arith.Nope", "Nope.Nope", "Nope", "Arith.Panic", "Feed.Count", "Bare.Code", "Arith.Sentinel"} {
		var r1, r2 int
		errWire, errCodec := wire.Call(ctx, method, Args{1, 2}, &r1), c.Call(ctx, method, Args{1, 2}, &r2)
		var ew, ec *dispatch.Error
		require.True(t, errors.As(errWire, &ew), "%s: %v", method, errWire)
		require.True(t, errors.As(errCodec, &ec), "%s: %v", method, errCodec)
		if method == "Arith.Sentinel" {
			// A handler's own code does not cross net/rpc; its words do.
			assert.Equal(t, dispatch.Error{Code: dispatch.CodeUnknown, Message: ew.Message}, *ec)
			continue
		}
		assert.Equal(t, *ew, *ec, method)
	}

	// Arguments the handler cannot take: CodeInvalidArgument.
	var s string
	err = c.Call(ctx, "Arith.Multiply", "six", &s)
	assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err), "%v", err)

	// Neither metadata nor a deadline crosses; the capture receives none.
	mctx, cancel := context.WithTimeout(dispatch.WithMetadata(ctx, dispatch.Metadata{"caller": "me"}), time.Minute)
	defer cancel()
	got := dispatch.Metadata{"stale": "yes"}
	var info CtxInfo
	require.NoError(t, c.Call(dispatch.CaptureReplyMetadata(mctx, &got), "Arith.Context", Args{A: 60000}, &info))
	assert.False(t, info.HasDeadline)
	assert.Empty(t, info.Metadata)
	assert.Nil(t, got)
}

// TestCodecClientAdmission: a dispatch Server's refusal of a call over
// its WithMaxCallsPerConn reads as it does on zerodial's wire:
// CodeResourceExhausted, with the Server's words.
func TestCodecClientAdmission(t *testing.T) {
	srv := dispatch.NewServer(dispatch.WithMaxCallsPerConn(1))
	arith := newArith()
	require.NoError(t, srv.RegisterName("Arith", arith))
	c, err := dispatch.DialCodec(t.Context(), nil, "tcp", serveGob(t, srv), gobClientCodec)
	require.NoError(t, err)
	var blocked int
	errc := callAsync(c, t.Context(), "Arith.Block", Args{}, &blocked)
	recv(t, arith.started, waitLong, "the handler")
	var n int
	err = c.Call(t.Context(), "Arith.Multiply", Args{2, 2}, &n)
	var de *dispatch.Error
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, dispatch.Error{Code: dispatch.CodeResourceExhausted, Message: "dispatch: too many calls in flight on this connection (limit 1)"}, *de)
	// Closing the Client ends the connection, and with it the handler's
	// context.
	require.NoError(t, c.Close())
	assert.ErrorIs(t, recv(t, errc, waitLong, "the blocked call"), dispatch.ErrShutdown)
	assert.ErrorIs(t, recv(t, arith.canceled, waitLong, "the handler's end"), context.Canceled)
}

// TestCodecClientServerShutdown: a call that reaches a dispatch Server
// once its Shutdown has begun is refused with CodeUnavailable, as on
// zerodial's wire, which a Client of replicas takes as "try another".
func TestCodecClientServerShutdown(t *testing.T) {
	srv := dispatch.NewServer()
	arith := newArith()
	require.NoError(t, srv.RegisterName("Arith", arith))
	c := dialLegacy(t, serveGob(t, srv), gobClientCodec)
	var b Blob
	errc := callAsync(c, t.Context(), "Arith.SlowEcho", &Delayed{Delay: 60000, Data: []byte("x")}, &b)
	recv(t, arith.echoStarted, waitLong, "the handler")
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	// Shutdown begins at some point: from then on a new call is refused.
	var err error
	for deadline := time.Now().Add(waitLong); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var n int
		if err = c.Call(t.Context(), "Arith.Multiply", Args{1, 1}, &n); err != nil {
			break
		}
	}
	var de *dispatch.Error
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, dispatch.Error{Code: dispatch.CodeUnavailable, Message: "dispatch: server is shutting down"}, *de)
	assert.ErrorIs(t, err, &dispatch.Error{Code: dispatch.CodeUnavailable, Message: "dispatch: server is shutting down"})
	arith.echoRelease <- struct{}{}
	require.NoError(t, recv(t, errc, waitLong, "the call in flight"), "the call in flight is answered")
	assert.Equal(t, []byte("x"), b.Data)
	require.NoError(t, recv(t, shut, waitLong, "Shutdown"))
}
