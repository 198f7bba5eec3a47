package httpzerodial_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// Retry is the detail the handlers of these tests attach to their errors.
type Retry struct {
	After   int
	Reasons []string
}

// detailServer serves Calc.Detail, which fails with two details, and
// Calc.DetailStream, a stream that ends so.
func detailServer(t *testing.T) *dispatch.Server {
	srv := dispatch.NewServer()
	fail := func() error {
		return (&dispatch.Error{Code: dispatch.CodeUnavailable, Message: "try later"}).
			WithDetail(Retry{After: 5, Reasons: []string{"busy"}}).
			WithDetails(dispatch.ErrorDetail{Type: "raw", Value: []byte{1, 2, 3}})
	}
	require.NoError(t, dispatch.Handle(srv, "Calc.Detail", func(ctx context.Context, a *Pair, r *int) error {
		return fail()
	}))
	require.NoError(t, dispatch.HandleStream(srv, "Calc.DetailStream", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		return fail()
	}))
	return srv
}

// wantDetails checks that connect-go's error err carries the two details
// of detailServer's error, read back as a dispatch.ErrorDetail.
func wantDetails(t *testing.T, err error) {
	t.Helper()
	assert.Equal(t, connect.CodeUnavailable, codeOf(t, err))
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "try later", ce.Message())
	ds := ce.Details()
	require.Len(t, ds, 2)
	assert.Equal(t, dispatch.ErrorDetailType[Retry](), ds[0].Type())
	var r Retry
	require.NoError(t, dispatch.ErrorDetail{Type: ds[0].Type(), Value: ds[0].Bytes()}.Decode(&r))
	assert.Equal(t, Retry{After: 5, Reasons: []string{"busy"}}, r)
	assert.Equal(t, "raw", ds[1].Type())
	assert.Equal(t, []byte{1, 2, 3}, ds[1].Bytes())
	_, verr := ds[0].Value()
	assert.Error(t, verr, "the value is msgpack, which no Protobuf type claims")
}

// connect-go's client sees a *dispatch.Error's details as error details,
// over Connect, gRPC and gRPC-Web, unary and at a stream's end.
func TestErrorDetailsReachConnectClients(t *testing.T) {
	ts := serve(t, detailServer(t))
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			_, err := client[Pair, int](t, ts, p, "/Calc/Detail").CallUnary(context.Background(), connect.NewRequest(&Pair{}))
			wantDetails(t, err)

			st, err := client[Pair, int](t, ts, p, "/Calc/DetailStream").CallServerStream(context.Background(), connect.NewRequest(&Pair{}))
			require.NoError(t, err)
			for st.Receive() {
				t.Error("a message from a stream that sends none")
			}
			wantDetails(t, st.Err())
			require.NoError(t, st.Close())
		})
	}
}

// grpc-go's client sees the details as Anys in the status, under
// DetailTypeURLPrefix.
func TestErrorDetailsReachGRPCGoClient(t *testing.T) {
	ts := serve(t, detailServer(t))
	conn := grpcConn(t, ts.URL)
	var reply int
	err := conn.Invoke(context.Background(), "/Calc/Detail", &Pair{}, &reply)
	st := status.Convert(err)
	assert.Equal(t, "try later", st.Message())
	ds := st.Proto().GetDetails()
	require.Len(t, ds, 2)
	assert.Equal(t, httpzerodial.DetailTypeURLPrefix+dispatch.ErrorDetailType[Retry](), ds[0].GetTypeUrl())
	var r Retry
	require.NoError(t, dispatch.ErrorDetail{Value: ds[0].GetValue()}.Decode(&r))
	assert.Equal(t, 5, r.After)
	assert.Equal(t, httpzerodial.DetailTypeURLPrefix+"raw", ds[1].GetTypeUrl())
	assert.Equal(t, []byte{1, 2, 3}, ds[1].GetValue())
}

// An error whose details are over dispatch.MaxErrorDetailsSize reaches an
// HTTP caller as every path's caller gets it: CodeInternal, in the same
// words, without them; details just within the bound cross whole.
func TestErrorDetailsBoundOverHTTP(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Calc.Big", func(ctx context.Context, a *Pair, r *int) error {
		return (&dispatch.Error{Code: dispatch.CodeAborted, Message: "big"}).
			WithDetails(dispatch.ErrorDetail{Type: "t", Value: make([]byte, a.A)})
	}))
	ts := serve(t, srv)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := client[Pair, int](t, ts, p, "/Calc/Big")
			// 1 + 1 bytes of type, 3 of length: 65,531 bytes of value fit.
			_, err := c.CallUnary(context.Background(), connect.NewRequest(&Pair{A: dispatch.MaxErrorDetailsSize - 5}))
			assert.Equal(t, connect.CodeAborted, codeOf(t, err))
			var ce *connect.Error
			require.ErrorAs(t, err, &ce)
			require.Len(t, ce.Details(), 1)
			assert.Len(t, ce.Details()[0].Bytes(), dispatch.MaxErrorDetailsSize-5)

			_, err = c.CallUnary(context.Background(), connect.NewRequest(&Pair{A: dispatch.MaxErrorDetailsSize - 4}))
			assert.Equal(t, connect.CodeInternal, codeOf(t, err))
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "dispatch: error details are too large: 65537 bytes, limit 65536 (the error was: big)", ce.Message())
			assert.Empty(t, ce.Details())
		})
	}
}
