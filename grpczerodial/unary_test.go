package grpczerodial_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// The generated client of gRPC's interop TestService calls its generated
// server, registered through a Registrar, on every path.
func TestUnary(t *testing.T) {
	forEachPath(t, setup{}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		_, err := tc.EmptyCall(context.Background(), &testpb.Empty{})
		require.NoError(t, err)

		req := &testpb.SimpleRequest{
			ResponseType: testpb.PayloadType_COMPRESSABLE,
			ResponseSize: 314159,
			Payload:      &testpb.Payload{Body: make([]byte, 271828)},
		}
		reply, err := tc.UnaryCall(context.Background(), req)
		require.NoError(t, err)
		assert.Len(t, reply.GetPayload().GetBody(), 314159)

		hc := healthpb.NewHealthClient(e.cc)
		res, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, res.GetStatus())
	})
}
