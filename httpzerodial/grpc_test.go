package httpzerodial_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
)

// grpc-go's own client, with a JSON codec of its own: a gRPC client in
// another process or language, as far as the server can tell.

// grpcJSON is grpc-go's codec for Go types in JSON
// ("application/grpc+json").
type grpcJSON struct{}

func (grpcJSON) Name() string                    { return "json" }
func (grpcJSON) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (grpcJSON) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func grpcConn(t *testing.T, url string) *grpc.ClientConn {
	conn, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(url, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(grpcJSON{})))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestGRPCGoClient(t *testing.T) {
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	ts := serve(t, srv)
	conn := grpcConn(t, ts.URL)

	var reply int
	var header metadata.MD
	ctx := metadata.AppendToOutgoingContext(context.Background(), "trace-id", "from-grpc")
	require.NoError(t, conn.Invoke(ctx, "/Calc/Add", &Pair{A: 20, B: 22}, &reply, grpc.Header(&header)))
	assert.Equal(t, 42, reply)
	assert.Equal(t, []string{"calc"}, header.Get("answered-by"))
	assert.Equal(t, dispatch.Metadata{"trace-id": "from-grpc"}, c.seen().md)

	var trailer metadata.MD
	err := conn.Invoke(context.Background(), "/Calc/Fail", &Pair{}, &reply, grpc.Trailer(&trailer))
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	assert.Equal(t, "the sum is odd", status.Convert(err).Message())
	assert.Equal(t, []string{"odd"}, trailer.Get("why"))

	err = conn.Invoke(context.Background(), "/Calc/Nope", &Pair{}, &reply)
	assert.Equal(t, codes.NotFound, status.Code(err))

	// A server stream.
	st, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/Calc/Count")
	require.NoError(t, err)
	require.NoError(t, st.SendMsg(&Pair{A: 3}))
	require.NoError(t, st.CloseSend())
	var got []int
	for {
		var n int
		if err := st.RecvMsg(&n); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		got = append(got, n)
	}
	assert.Equal(t, []int{1, 2, 3}, got)
	assert.Equal(t, []string{"yes"}, st.Trailer().Get("counted"))

	// A bidi stream: an answer to each message before the next.
	bidi, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/Calc/Echo")
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, bidi.SendMsg(&Pair{A: i, B: 1}))
		var n int
		require.NoError(t, bidi.RecvMsg(&n))
		assert.Equal(t, i+1, n)
	}
	require.NoError(t, bidi.CloseSend())
	assert.ErrorIs(t, bidi.RecvMsg(new(int)), io.EOF)
}
