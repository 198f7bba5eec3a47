package grpczerodial_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/interop"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zerodial/transport/grpczerodial"
)

// interopCases are gRPC's interop cases that take a generated client.
var interopCases = []struct {
	name string
	do   func(ctx context.Context, tc testpb.TestServiceClient)
}{
	{"empty_unary", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoEmptyUnaryCall(ctx, tc) }},
	{"large_unary", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoLargeUnaryCall(ctx, tc) }},
	{"client_streaming", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoClientStreaming(ctx, tc) }},
	{"server_streaming", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoServerStreaming(ctx, tc) }},
	{"ping_pong", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoPingPong(ctx, tc) }},
	{"empty_stream", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoEmptyStream(ctx, tc) }},
	{"timeout_on_sleeping_server", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoTimeoutOnSleepingServer(ctx, tc) }},
	{"cancel_after_begin", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoCancelAfterBegin(ctx, tc) }},
	{"cancel_after_first_response", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoCancelAfterFirstResponse(ctx, tc) }},
	{"custom_metadata", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoCustomMetadata(ctx, tc) }},
	{"status_code_and_message", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoStatusCodeAndMessage(ctx, tc) }},
	{"special_status_message", func(ctx context.Context, tc testpb.TestServiceClient) { interop.DoSpecialStatusMessage(ctx, tc) }},
}

// gRPC's own interop cases (google.golang.org/grpc/interop), with their
// own checks, run by the generated client against interop.NewTestServer
// registered through a Registrar, on every path, its methods copied and
// lent (Borrows). A case that fails ends the test binary with its message
// (the cases call grpclog's Fatal).
func TestInterop(t *testing.T) {
	registrations := []struct {
		name string
		s    setup
	}{
		{"copied", setup{}},
		{"borrowed", setup{register: func(reg *grpczerodial.Registrar) {
			require.NoError(t, reg.Register(&testpb.TestService_ServiceDesc, interop.NewTestServer(), grpczerodial.Borrows()))
		}}},
	}
	for _, r := range registrations {
		t.Run(r.name, func(t *testing.T) { runInterop(t, r.s) })
	}
}

// runInterop runs the interop cases over every path, against the
// TestService s registers.
func runInterop(t *testing.T, s setup) {
	forEachPath(t, s, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		for _, c := range interopCases {
			t.Run(c.name, func(t *testing.T) { c.do(context.Background(), tc) })
		}
		t.Run("unimplemented_service", func(t *testing.T) {
			interop.DoUnimplementedService(context.Background(), testpb.NewUnimplementedServiceClient(e.cc))
		})
		// interop.DoUnimplementedMethod takes a *grpc.ClientConn; this is
		// its call, through the ClientConn.
		t.Run("unimplemented_method", func(t *testing.T) {
			var req, reply proto.Message
			err := e.cc.Invoke(context.Background(), "/grpc.testing.TestService/UnimplementedCall", req, reply)
			require.Error(t, err)
			assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
		})
	})
}
