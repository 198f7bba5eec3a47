package grpczerodial_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
)

// grpc.Peer, given to a unary call or a stream, is filled with the address
// of the Server the call went to, on every path (the shortcut's is the
// address the Client dialled), with a reply and with an error. It was left
// as it was, and a stream's was until dispatch.Stream.CallInfo.
func TestCallPeer(t *testing.T) {
	forEachPath(t, setup{}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		var got peer.Peer
		_, err := tc.EmptyCall(context.Background(), &testpb.Empty{}, grpc.Peer(&got))
		require.NoError(t, err)
		require.NotNil(t, got.Addr)
		assert.Equal(t, e.addr, got.Addr.String())

		var failed peer.Peer
		_, err = tc.UnaryCall(context.Background(), &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: 9}}, grpc.Peer(&failed))
		require.Error(t, err)
		require.NotNil(t, failed.Addr)
		assert.Equal(t, e.addr, failed.Addr.String())

		var streamed peer.Peer
		s, err := tc.StreamingOutputCall(context.Background(), &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 1}}}, grpc.Peer(&streamed))
		require.NoError(t, err)
		for err == nil {
			_, err = s.Recv()
		}
		require.ErrorIs(t, err, io.EOF)
		require.NotNil(t, streamed.Addr)
		assert.Equal(t, e.addr, streamed.Addr.String())
	})
}
