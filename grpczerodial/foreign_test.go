package grpczerodial_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// A caller that is not a ClientConn — dispatch's own API with encoded
// messages, as another protocol would carry them — gets the messages of a
// gRPC stream as their protobuf encodings alone, and the header the
// handler sent with the stream's end, beside its trailer; the handler's
// incoming metadata is the caller's, on every path.
func TestStreamToDispatchCaller(t *testing.T) {
	h := &hooked{output: func(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
		in, _ := metadata.FromIncomingContext(s.Context())
		if err := s.SendHeader(metadata.Pairs("h", "early", "keys", string(rune('0'+len(in))))); err != nil {
			return err
		}
		s.SetTrailer(metadata.Pairs("t", "1"))
		for _, p := range req.GetResponseParameters() {
			if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
				return err
			}
		}
		return nil
	}}
	forEachPath(t, setup{register: registering(h)}, func(t *testing.T, p path, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		var rmd dispatch.Metadata
		ctx = dispatch.CaptureReplyMetadata(dispatch.WithMetadata(ctx, dispatch.Metadata{"who": "dispatch"}), &rmd)
		s, err := dispatch.OpenStream[codec.Raw, codec.Raw](ctx, e.c, "grpc.testing.TestService.StreamingOutputCall")
		require.NoError(t, err)
		defer s.Close()
		req, err := proto.Marshal(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 3}, {Size: 5}}})
		require.NoError(t, err)
		raw := codec.Raw(req)
		require.NoError(t, s.Send(&raw))
		require.NoError(t, s.CloseSend())
		var sizes []int
		for m, err := range s.Recv() {
			require.NoError(t, err)
			var out testpb.StreamingOutputCallResponse
			require.NoError(t, proto.Unmarshal(*m, &out))
			sizes = append(sizes, len(out.GetPayload().GetBody()))
		}
		assert.Equal(t, []int{3, 5}, sizes)
		want := dispatch.Metadata{"h": "early", "keys": "1", "t#t": "1"}
		if p.overHTTP() {
			want = dispatch.Metadata{"h": "early", "keys": "1", "t": "1"}
		}
		assert.Equal(t, want, rmd)
	})
}
