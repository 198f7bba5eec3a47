package httpzerodial_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

func TestMethodRegisteredLater(t *testing.T) {
	srv := dispatch.NewServer()
	ts := serve(t, srv)
	sub := client[Pair, int](t, ts, protocols[0], "/Calc/Sub")
	_, err := sub.CallUnary(context.Background(), connect.NewRequest(&Pair{A: 5, B: 3}))
	assert.Equal(t, connect.CodeNotFound, codeOf(t, err))

	require.NoError(t, dispatch.Handle(srv, "Calc.Sub", func(ctx context.Context, a *Pair, r *int) error {
		*r = a.A - a.B
		return nil
	}))
	res, err := sub.CallUnary(context.Background(), connect.NewRequest(&Pair{A: 5, B: 3}))
	require.NoError(t, err)
	assert.Equal(t, 2, *res.Msg)
}

func TestServiceWithDots(t *testing.T) {
	// A gRPC-style service name, package and all: /acme.v1.Calc/Add.
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "acme.v1.Calc.Add", func(ctx context.Context, a *Pair, r *int) error {
		*r = a.A + a.B
		return nil
	}))
	ts := serve(t, srv)
	res, err := client[Pair, int](t, ts, protocols[2], "/acme.v1.Calc/Add").CallUnary(context.Background(), connect.NewRequest(&Pair{A: 1, B: 2}))
	require.NoError(t, err)
	assert.Equal(t, 3, *res.Msg)
}

func TestTLS(t *testing.T) {
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	hc := ts.Client()
	t.Cleanup(hc.CloseIdleConnections)
	for _, opt := range []connect.ClientOption{connect.WithGRPC(), connect.WithCodec(jsonCodec{})} {
		cl := connect.NewClient[Pair, int](hc, ts.URL+"/Calc/Add", connect.WithCodec(jsonCodec{}), opt)
		res, err := cl.CallUnary(context.Background(), connect.NewRequest(&Pair{A: 1, B: 1}))
		require.NoError(t, err)
		assert.Equal(t, 2, *res.Msg)
		got := c.seen()
		require.NotNil(t, got.info.TLS, "the handler sees the connection's TLS state")
		assert.True(t, got.info.TLS.HandshakeComplete)
		assert.Equal(t, "h2", got.info.TLS.NegotiatedProtocol)
		assert.Equal(t, uint16(tls.VersionTLS13), got.info.TLS.Version)
	}
}

func TestWrongContentType(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	// Refused with 415 and a Connect error body that says what to send.
	for _, h2 := range []bool{false, true} {
		for _, ct := range []string{"text/plain", "application/xml", "application/grpc+xml"} {
			res, err := httpClient(t, h2).Post(ts.URL+"/Calc/Add", ct, strings.NewReader(`{"a":1}`))
			require.NoError(t, err)
			var e struct{ Code, Message string }
			require.NoError(t, json.NewDecoder(res.Body).Decode(&e), ct)
			res.Body.Close()
			assert.Equal(t, http.StatusUnsupportedMediaType, res.StatusCode, ct)
			assert.Equal(t, "application/json", res.Header.Get("Content-Type"), ct)
			assert.Equal(t, "unimplemented", e.Code, ct)
			assert.Contains(t, e.Message, "httpzerodial: Calc.Add does not take Content-Type "+strconv.Quote(ct)+"; POST its arguments as application/json", ct)
		}
	}
	hc := httpClient(t, false)
	// Protobuf, connect-go's default, is refused with words that say what
	// to send instead.
	_, err := connect.NewClient[[]byte, []byte](hc, ts.URL+"/Calc/Add", connect.WithCodec(rawProto{})).
		CallUnary(context.Background(), connect.NewRequest(new([]byte{8, 1})))
	assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, err))
	assert.Contains(t, err.Error(), "Protobuf is not served")
}

// rawProto sends bytes as they are, as Protobuf.
type rawProto struct{ rawCodec }

func (rawProto) Name() string { return "proto" }

func TestReplyMetadataThatHeadersCannotCarry(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Meta.Set", func(ctx context.Context, a *Pair, r *int) error {
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{
			"ok":            "yes",
			"bad name":      "x",
			"bad-value":     "a\r\nInjected: 1",
			"grpc-status":   "0",
			"connect-thing": "x",
			"content-type":  "text/plain",
		})
	}))
	ts := serve(t, srv)
	for _, p := range protocols {
		res, err := client[Pair, int](t, ts, p, "/Meta/Set").CallUnary(context.Background(), connect.NewRequest(&Pair{}))
		require.NoError(t, err, p.name)
		assert.Equal(t, "yes", res.Header().Get("Ok"), p.name)
		assert.Empty(t, res.Header().Get("Injected"), p.name)
		assert.Empty(t, res.Header().Get("Bad-Value"), p.name)
		assert.Empty(t, res.Header().Get("Connect-Thing"), p.name)
		assert.NotEqual(t, "text/plain", res.Header().Get("Content-Type"), p.name)
	}
}

// detailing is a connect-go interceptor that adds a Protobuf detail to
// every error: connect-go's own Protobuf, through the codec named "proto".
type detailing struct{}

func (detailing) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		var ce *connect.Error
		if errors.As(err, &ce) {
			d, derr := connect.NewErrorDetail(wrapperspb.String("detail"))
			if derr != nil {
				return nil, derr
			}
			ce.AddDetail(d)
		}
		return res, err
	}
}

func (detailing) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (detailing) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func TestConnectOptionsAndErrorDetails(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv, httpzerodial.WithConnectOptions(connect.WithInterceptors(detailing{})))
	for _, p := range protocols {
		_, err := client[Pair, int](t, ts, p, "/Calc/Fail").CallUnary(context.Background(), connect.NewRequest(&Pair{}))
		assert.Equal(t, connect.CodeFailedPrecondition, codeOf(t, err), p.name)
		var ce *connect.Error
		require.ErrorAs(t, err, &ce)
		require.Len(t, ce.Details(), 1, p.name)
		v, err := ce.Details()[0].Value()
		require.NoError(t, err, p.name)
		assert.Equal(t, "detail", v.(*wrapperspb.StringValue).GetValue(), p.name)
	}
}
