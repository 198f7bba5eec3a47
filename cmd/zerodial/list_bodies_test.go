package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
)

// list shows a method of raw bodies whose Server said what they hold (a
// gRPC method registered through grpczerodial) with its messages in their
// encoding and where it comes from, not as bytes.
func TestListBodies(t *testing.T) {
	srv := dispatch.NewServer()
	raw := func(ctx context.Context, a, r *codec.Raw) error { return nil }
	require.NoError(t, dispatch.Handle(srv, "grpc.testing.TestService.UnaryCall", raw, dispatch.WithEncoding(dispatch.Encoding{
		Name: "protobuf", Args: "grpc.testing.SimpleRequest", Reply: "grpc.testing.SimpleResponse",
		Origin: "gRPC method /grpc.testing.TestService/UnaryCall"})))
	require.NoError(t, dispatch.HandleStream(srv, "grpc.testing.TestService.FullDuplexCall", func(ctx context.Context, s *dispatch.ServerStream[codec.Raw, codec.Raw]) error { return nil },
		dispatch.WithEncoding(dispatch.Encoding{Name: "protobuf", Args: "grpc.testing.StreamingOutputCallRequest", Reply: "grpc.testing.StreamingOutputCallResponse",
			Origin: "gRPC method /grpc.testing.TestService/FullDuplexCall"})))
	require.NoError(t, dispatch.Handle(srv, "Raw.Echo", raw))
	require.NoError(t, describe.Register(srv))
	r := zd(t, "list", serve(t, srv, mux.New()))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "grpc.testing.TestService.UnaryCall(protobuf grpc.testing.SimpleRequest) protobuf grpc.testing.SimpleResponse  # gRPC method /grpc.testing.TestService/UnaryCall\n")
	assert.Contains(t, r.stdout, "grpc.testing.TestService.FullDuplexCall(protobuf grpc.testing.StreamingOutputCallRequest) stream protobuf grpc.testing.StreamingOutputCallResponse  # gRPC method /grpc.testing.TestService/FullDuplexCall\n")
	// Raw bodies that say nothing stay bytes.
	assert.Contains(t, r.stdout, "Raw.Echo(bytes) bytes\n")
}
