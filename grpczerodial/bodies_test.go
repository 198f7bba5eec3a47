package grpczerodial_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
)

// Each method a Registrar registers says what its raw bodies hold
// (dispatch.MethodInfo's Encoding): protobuf, its messages' full names
// and its gRPC name, unary and streaming alike.
func TestMethodEncoding(t *testing.T) {
	srv := dispatch.NewServer()
	testpb.RegisterTestServiceServer(grpczerodial.NewRegistrar(srv), &hooked{})
	info, ok := srv.Method("grpc.testing.TestService.UnaryCall")
	require.True(t, ok)
	require.NotNil(t, info.Encoding)
	assert.Equal(t, dispatch.Encoding{Name: "protobuf", Args: "grpc.testing.SimpleRequest", Reply: "grpc.testing.SimpleResponse",
		Origin: "gRPC method /grpc.testing.TestService/UnaryCall"}, *info.Encoding)
	assert.Equal(t, "protobuf grpc.testing.SimpleRequest → grpc.testing.SimpleResponse (gRPC method /grpc.testing.TestService/UnaryCall)",
		info.Encoding.String())
	// describe shows it (as rpcdebug and cmd/zerodial's list do).
	for _, m := range describe.Of(srv).Methods {
		if m.Name == "grpc.testing.TestService.UnaryCall" {
			assert.Equal(t, info.Encoding, m.Encoding)
			assert.Equal(t, "protobuf grpc.testing.SimpleRequest", m.Args["description"])
		}
	}
	info, ok = srv.Method("grpc.testing.TestService.FullDuplexCall")
	require.True(t, ok)
	require.NotNil(t, info.Encoding)
	assert.Equal(t, dispatch.Encoding{Name: "protobuf", Args: "grpc.testing.StreamingOutputCallRequest", Reply: "grpc.testing.StreamingOutputCallResponse",
		Origin: "gRPC method /grpc.testing.TestService/FullDuplexCall"}, *info.Encoding)
}
