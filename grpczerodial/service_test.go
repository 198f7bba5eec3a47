package grpczerodial_test

import (
	"context"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/zerodial/transport/grpczerodial"
)

// hooked is gRPC's TestService, generated, with handlers a test sets.
type hooked struct {
	testpb.UnimplementedTestServiceServer
	unary  func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error)
	output func(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error
}

func (h *hooked) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return h.unary(ctx, req)
}

func (h *hooked) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	return h.output(req, s)
}

// registering returns a setup's register function for h.
func registering(h *hooked) func(reg *grpczerodial.Registrar) {
	return func(reg *grpczerodial.Registrar) { testpb.RegisterTestServiceServer(reg, h) }
}
