package describe_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
)

// A method of raw bodies registered with what they hold
// (dispatch.WithEncoding, as grpczerodial registers a gRPC method) is
// described as such: its encoding, and args and reply as bytes of the
// messages named, not bytes without a word.
func TestDescribeEncoding(t *testing.T) {
	srv := dispatch.NewServer()
	e := dispatch.Encoding{Name: "protobuf", Args: "grpc.testing.SimpleRequest", Reply: "grpc.testing.SimpleResponse",
		Origin: "gRPC method /grpc.testing.TestService/UnaryCall"}
	require.NoError(t, dispatch.Handle(srv, "grpc.testing.TestService.UnaryCall", func(ctx context.Context, a, r *codec.Raw) error { return nil }, dispatch.WithEncoding(e)))
	d := describe.Of(srv)
	require.Len(t, d.Methods, 1)
	m := d.Methods[0]
	assert.Equal(t, &e, m.Encoding)
	assert.Equal(t, describe.Schema{"type": "string", "contentEncoding": "base64", "description": "protobuf grpc.testing.SimpleRequest"}, m.Args)
	assert.Equal(t, describe.Schema{"type": "string", "contentEncoding": "base64", "description": "protobuf grpc.testing.SimpleResponse"}, m.Reply)
}
