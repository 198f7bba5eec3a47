package httpzerodial_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/tcp"
)

// Parity: the same calls on zerodial's wire (a dispatch Client over tcp)
// and over HTTP (connect-go's client: Connect JSON over HTTP/1.1, gRPC
// msgpack over h2c), one Server serving both, give the same outcome — the
// reply, or the code and the words of the error, and the reply metadata.
// What differs is declared below, with why.

// outcome is what a caller can observe of a unary call.
type outcome struct {
	reply int
	code  dispatch.Code
	msg   string
	md    dispatch.Metadata
}

// onBoth serves srv on tcp and over HTTP, and returns a caller of each.
func onBoth(t *testing.T, srv *dispatch.Server) (map[string]func(ctx context.Context, method string, args Pair) outcome, *httptest.Server) {
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	ts := serve(t, srv)
	zc, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { zc.Close() })

	callers := map[string]func(ctx context.Context, method string, args Pair) outcome{
		"tcp": func(ctx context.Context, method string, args Pair) outcome {
			var md dispatch.Metadata
			var o outcome
			err := zc.Call(dispatch.CaptureReplyMetadata(ctx, &md), method, args, &o.reply)
			o.md = md
			var e *dispatch.Error
			if errors.As(err, &e) {
				o.code, o.msg = e.Code, e.Message
			} else if err != nil {
				o.msg = "not an *Error: " + err.Error()
			}
			return o
		},
	}
	for _, p := range []struct {
		name string
		p    protocol
		cdc  connect.Codec
	}{{"connect-json-http1", protocols[0], jsonCodec{}}, {"grpc-msgpack-h2c", protocols[2], msgpackCodec{}}} {
		callers[p.name] = func(ctx context.Context, method string, args Pair) outcome {
			dot := strings.LastIndex(method, ".")
			path := "/" + method[:dot] + "/" + method[dot+1:]
			cl := client[Pair, int](t, ts, p.p, path, connect.WithCodec(p.cdc))
			var o outcome
			res, err := cl.CallUnary(ctx, connect.NewRequest(&args))
			if err == nil {
				o.reply = *res.Msg
				o.md = metadataOf(res.Header(), "Answered-By", "Why")
				return o
			}
			var ce *connect.Error
			if !errors.As(err, &ce) {
				o.msg = "not a connect error: " + err.Error()
				return o
			}
			o.code, o.msg = httpzerodial.DispatchCode(ce.Code()), ce.Message()
			o.md = metadataOf(ce.Meta(), "Answered-By", "Why")
			return o
		}
	}
	return callers, ts
}

// metadataOf reads the reply metadata keys given from headers, as the
// handler set them (lower case); nil when none is there.
func metadataOf(h interface{ Get(string) string }, keys ...string) dispatch.Metadata {
	var md dispatch.Metadata
	for _, k := range keys {
		if v := h.Get(k); v != "" {
			if md == nil {
				md = dispatch.Metadata{}
			}
			md[strings.ToLower(k)] = v
		}
	}
	return md
}

func TestParity(t *testing.T) {
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	callers, ts := onBoth(t, srv)

	for _, tc := range []struct {
		name   string
		method string
		args   Pair
		want   outcome
	}{
		{"reply and its metadata", "Calc.Add", Pair{A: 2, B: 3}, outcome{reply: 5, md: dispatch.Metadata{"answered-by": "calc"}}},
		{"handler error, its code and its metadata", "Calc.Fail", Pair{}, outcome{code: dispatch.CodeFailedPrecondition, msg: "the sum is odd", md: dispatch.Metadata{"why": "odd"}}},
		{"panic", "Calc.Panic", Pair{}, outcome{code: dispatch.CodeInternal, msg: "dispatch: panic in Calc.Panic: boom"}},
		{"unknown method", "Calc.Nope", Pair{}, outcome{code: dispatch.CodeNotFound, msg: "rpc: can't find method Calc.Nope"}},
		{"unknown service", "Nope.Add", Pair{}, outcome{code: dispatch.CodeNotFound, msg: "rpc: can't find service Nope.Add"}},
	} {
		for path, call := range callers {
			assert.Equal(t, tc.want, call(context.Background(), tc.method, tc.args), "%s on %s", tc.name, path)
		}
	}

	// The deadline reaches the handler and ends the call, with the same
	// code. A second, as the request must reach the handler before it
	// passes: with 100 ms, a loaded machine need not have got it there,
	// and the wait for the handler's end waited for ever.
	for path, call := range callers {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		o := call(ctx, "Calc.Slow", Pair{})
		cancel()
		assert.Equal(t, dispatch.CodeDeadlineExceeded, o.code, path)
		recv(t, c.ended, "the handler's end at the deadline, on "+path)
		assert.True(t, c.seen().hasDeadline, path)
	}

	// A call of a streaming method, and a Connect stream of a unary one,
	// refused with the code of dispatch's shape rule; gRPC's requests do
	// not say their shape, and the words differ (see
	// TestParityDifferences).
	for _, path := range []string{"tcp", "connect-json-http1"} {
		assert.Equal(t, dispatch.CodeInvalidArgument, callers[path](context.Background(), "Calc.Count", Pair{}).code, path)
	}
	_, _, err := count(t, client[Pair, int](t, ts, protocols[0], "/Calc/Add"), 1, nil)
	assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, err))

	// Shutdown: new calls refused with the same code and words, while one
	// is in flight.
	held := make(chan outcome, 1)
	go func() { held <- callers["tcp"](context.Background(), "Calc.Hold", Pair{}) }()
	recv(t, c.started, "the handler's start")
	began := make(chan struct{})
	srv.RegisterOnShutdown(func() { close(began) })
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	recv(t, began, "Shutdown's start")
	for path, call := range callers {
		if path == "tcp" {
			continue // the draining connection has told its Client: it refuses at once, with the same code
		}
		assert.Equal(t, outcome{code: dispatch.CodeUnavailable, msg: "dispatch: server is shutting down"},
			call(context.Background(), "Calc.Add", Pair{}), path)
	}
	close(c.release)
	assert.Equal(t, outcome{reply: 42}, recv(t, held, "the call in flight"))
	require.NoError(t, recv(t, shut, "Shutdown"))
}

// The differences, and why:
//
//   - A streaming method called as a unary one over gRPC: dispatch's shape
//     rule says invalid_argument on zerodial's wire; a gRPC request does
//     not say its shape (every gRPC call is a stream on the wire), so
//     connect-go's stream handler answers that it expected a stream
//     (unimplemented). A Connect request says its shape, and is refused by
//     the shape rule (TestParity).
//   - A call of the other shape over the Connect protocol (a plain POST
//     to a streaming method, a Connect stream of a unary one) is refused
//     with the shape rule's code, in words that say how to make the call
//     over HTTP: dispatch's speak of its Go API (OpenStream, Call), which a
//     person with curl does not have.
//   - Metadata keys arrive in lower case over HTTP (header names do not
//     keep their case), and reply metadata keys come back as header names.
//   - CallInfo's Path is tcp on one and http on the other: that is what it
//     is for.
func TestParityDifferences(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	callers, ts := onBoth(t, srv)
	assert.Equal(t, outcome{code: dispatch.CodeInvalidArgument, msg: "dispatch: Calc.Count is a streaming method; call it with OpenStream or CallStream"},
		callers["tcp"](context.Background(), "Calc.Count", Pair{}))
	o := callers["grpc-msgpack-h2c"](context.Background(), "Calc.Count", Pair{})
	assert.Equal(t, dispatch.CodeUnimplemented, o.code)

	assert.Equal(t, outcome{code: dispatch.CodeInvalidArgument, msg: "httpzerodial: Calc.Count is a streaming method; POST its message as a Connect stream," +
		" Content-Type application/connect+json, the message after a 5-byte prefix: a zero byte, then its length in 4 bytes, big-endian (as `zerodial stream` does)"},
		callers["connect-json-http1"](context.Background(), "Calc.Count", Pair{}))
	_, _, err := count(t, client[Pair, int](t, ts, protocols[0], "/Calc/Add", connect.WithCodec(msgpackCodec{})), 1, nil)
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, connect.CodeInvalidArgument, ce.Code())
	assert.Equal(t, "httpzerodial: Calc.Add is not a streaming method; POST its arguments as they are, Content-Type application/msgpack", ce.Message())
}
