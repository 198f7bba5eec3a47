package httpzerodial_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

func TestUnary(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			c := newCalc(t, srv)
			ts := serve(t, srv)
			add := client[Pair, int](t, ts, p, "/Calc/Add")
			req := connect.NewRequest(&Pair{A: 2, B: 3})
			req.Header().Set("Trace-Id", "t1")
			req.Header().Add("Tags", "a")
			req.Header().Add("Tags", "b")
			res, err := add.CallUnary(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, 5, *res.Msg)
			assert.Equal(t, "calc", res.Header().Get("Answered-By"), "reply metadata as a response header")

			got := c.seen()
			assert.Equal(t, dispatch.Metadata{"trace-id": "t1", "tags": "a, b"}, got.md, "request headers as metadata, without the protocol's")
			assert.Equal(t, "Calc.Add", got.info.Method)
			assert.Equal(t, dispatch.PathHTTP, got.info.Path)
			assert.Equal(t, ts.Listener.Addr().String(), got.info.LocalAddr.String())
			remote, ok := got.info.RemoteAddr.(*net.TCPAddr)
			require.True(t, ok, "RemoteAddr %T", got.info.RemoteAddr)
			assert.True(t, remote.IP.IsLoopback())
			assert.NotZero(t, remote.Port)
			assert.Nil(t, got.info.TLS)
			assert.False(t, got.hasDeadline, "no deadline from a client that set none")
		})
	}
}

func TestUnaryMsgpack(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			add := client[Pair, int](t, ts, p, "/Calc/Add", connect.WithCodec(msgpackCodec{}))
			res, err := add.CallUnary(context.Background(), connect.NewRequest(&Pair{A: 40, B: 2}))
			require.NoError(t, err)
			assert.Equal(t, 42, *res.Msg)
		})
	}
}

func TestUnaryErrors(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			for _, tc := range []struct {
				path string
				code connect.Code
				msg  string
			}{
				{"/Calc/Fail", connect.CodeFailedPrecondition, "the sum is odd"},
				{"/Calc/Panic", connect.CodeInternal, "dispatch: panic in Calc.Panic: boom"},
				{"/Calc/Nope", connect.CodeNotFound, "rpc: can't find method Calc.Nope"},
				{"/Nope/Add", connect.CodeNotFound, "rpc: can't find service Nope.Add"},
				{"/Calc/Add/More", connect.CodeNotFound, `httpzerodial: "/Calc/Add/More" is not a method's path, /Service/Method`},
			} {
				_, err := client[Pair, int](t, ts, p, tc.path).CallUnary(context.Background(), connect.NewRequest(&Pair{}))
				assert.Equal(t, tc.code, codeOf(t, err), tc.path)
				var ce *connect.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tc.msg, ce.Message(), tc.path)
				if tc.path == "/Calc/Fail" {
					assert.Equal(t, "odd", ce.Meta().Get("Why"), "reply metadata of an error")
				}
			}
		})
	}
}

// rawCodec sends a client's bytes as they are: JSON that is not JSON.
type rawCodec struct{}

func (rawCodec) Name() string { return "json" }
func (rawCodec) Marshal(v any) ([]byte, error) {
	return *v.(*[]byte), nil
}
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}

func TestUnaryBadRequests(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv, httpzerodial.WithReadMaxBytes(1024))
			add := client[[]byte, []byte](t, ts, p, "/Calc/Add", connect.WithCodec(rawCodec{}))

			_, err := add.CallUnary(context.Background(), connect.NewRequest(new([]byte(`{"a":`))))
			assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, err))
			assert.Contains(t, err.Error(), "dispatch: decoding arguments of Calc.Add: ")

			_, err = add.CallUnary(context.Background(), connect.NewRequest(new([]byte(`{"a":"two"}`))))
			assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, err))

			big := []byte(`{"a":1,"pad":"` + strings.Repeat("x", 2000) + `"}`)
			_, err = add.CallUnary(context.Background(), connect.NewRequest(&big))
			assert.Equal(t, connect.CodeResourceExhausted, codeOf(t, err))

			// An empty message is zero arguments, as nil arguments are on
			// every path.
			res, err := add.CallUnary(context.Background(), connect.NewRequest(new([]byte{})))
			require.NoError(t, err)
			assert.Equal(t, "0", string(*res.Msg))

			// The server goes on.
			res, err = add.CallUnary(context.Background(), connect.NewRequest(new([]byte(`{"a":1,"b":1}`))))
			require.NoError(t, err)
			assert.Equal(t, "2", string(*res.Msg))
		})
	}
}

func TestUnaryDeadline(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			c := newCalc(t, srv)
			ts := serve(t, srv)
			// A second, as the request must reach the handler before it
			// passes, which a loaded machine need not do within 200 ms.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := client[Pair, int](t, ts, p, "/Calc/Slow").CallUnary(ctx, connect.NewRequest(&Pair{}))
			assert.Equal(t, connect.CodeDeadlineExceeded, codeOf(t, err))
			// The handler's context ended at the request's deadline, which
			// the client sent (Connect-Timeout-Ms, grpc-timeout) — or, over
			// HTTP/2, with the request, when the client's reset of the
			// stream at the same deadline arrived first.
			ended := recv(t, c.ended, "the handler's end")
			assert.True(t, errors.Is(ended, context.DeadlineExceeded) || errors.Is(ended, context.Canceled), "%v", ended)
			got := c.seen()
			require.True(t, got.hasDeadline, "the handler has the client's deadline")
			assert.WithinDuration(t, time.Now(), got.deadline, 5*time.Second)
		})
	}
}

func TestUnaryHandlerEndsWithRequest(t *testing.T) {
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	ts := serve(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := client[Pair, int](t, ts, protocols[1], "/Calc/Hold").CallUnary(ctx, connect.NewRequest(&Pair{}))
		done <- err
	}()
	recv(t, c.started, "the handler's start")
	cancel()
	assert.Equal(t, connect.CodeCanceled, codeOf(t, recv(t, done, "the call")))
	assert.ErrorIs(t, recv(t, c.ended, "the handler's end"), context.Canceled, "the handler's context ends when the request's does")
}

func TestCodes(t *testing.T) {
	for c := connect.CodeCanceled; c <= connect.CodeUnauthenticated; c++ {
		d := httpzerodial.DispatchCode(c)
		assert.Equal(t, c, httpzerodial.ConnectCode(d), "%v round trip", c)
		if c != connect.CodeUnknown {
			assert.Equal(t, c.String(), string(d))
		}
	}
	// dispatch's named codes are all Connect's.
	for _, d := range []dispatch.Code{dispatch.CodeCanceled, dispatch.CodeInvalidArgument, dispatch.CodeDeadlineExceeded,
		dispatch.CodeNotFound, dispatch.CodeAlreadyExists, dispatch.CodePermissionDenied, dispatch.CodeResourceExhausted,
		dispatch.CodeFailedPrecondition, dispatch.CodeAborted, dispatch.CodeOutOfRange, dispatch.CodeUnimplemented,
		dispatch.CodeInternal, dispatch.CodeUnavailable, dispatch.CodeDataLoss, dispatch.CodeUnauthenticated} {
		assert.NotEqual(t, connect.CodeUnknown, httpzerodial.ConnectCode(d), d)
		assert.Equal(t, d, httpzerodial.DispatchCode(httpzerodial.ConnectCode(d)))
	}
	assert.Equal(t, connect.CodeUnknown, httpzerodial.ConnectCode(dispatch.CodeUnknown))
	assert.Equal(t, connect.CodeUnknown, httpzerodial.ConnectCode("a_code_of_my_own"))
	assert.Equal(t, dispatch.CodeUnknown, httpzerodial.DispatchCode(connect.CodeUnknown))
}
