package grpczerodial_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// A generated client over a dispatch.Client of replicas: calls and streams
// are spread over both, and when one shuts down gracefully its callers go
// on with the other and see no error, as every call over replicas does.
func TestReplicas(t *testing.T) {
	tr := tcp.New()
	var addrs []string
	var servers []*dispatch.Server
	for _, name := range []string{"a", "b"} {
		srv := dispatch.NewServer()
		h := &hooked{
			unary: func(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
				return &testpb.SimpleResponse{ServerId: name}, nil
			},
			output: func(_ *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
				return s.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte(name)}})
			},
		}
		testpb.RegisterTestServiceServer(grpczerodial.NewRegistrar(srv), h)
		l, err := tr.Listen("127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		t.Cleanup(func() { srv.Close() })
		addrs = append(addrs, l.Addr().String())
		servers = append(servers, srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	c, err := dispatch.Dial(ctx, tr, "static:///"+strings.Join(addrs, ","), dispatch.WithResolver(resolver.Default))
	require.NoError(t, err)
	defer c.Close()
	tc := testpb.NewTestServiceClient(grpczerodial.NewClientConn(c))

	seen := map[string]int{}
	for range 20 {
		reply, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{})
		require.NoError(t, err)
		seen[reply.GetServerId()]++
		s, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
		require.NoError(t, err)
		m, err := s.Recv()
		require.NoError(t, err)
		seen["stream "+string(m.GetPayload().GetBody())]++
	}
	// Round-robin over calls and streams together: each replica took half.
	assert.Equal(t, 20, seen["a"]+seen["stream a"], "%v", seen)
	assert.Equal(t, 20, seen["b"]+seen["stream b"], "%v", seen)

	require.NoError(t, servers[0].Shutdown(ctx))
	for range 20 {
		var p peer.Peer
		reply, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Peer(&p))
		require.NoError(t, err)
		assert.Equal(t, "b", reply.GetServerId())
		// grpc.Peer names the replica the call went to.
		require.NotNil(t, p.Addr)
		assert.Equal(t, addrs[1], p.Addr.String())
	}
}
