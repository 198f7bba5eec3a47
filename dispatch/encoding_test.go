package dispatch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// WithEncoding says what a method of raw bodies holds, which MethodInfo
// reports (a copy of its own); a method of other types, a nameless
// encoding and Register are refused with words that say so.
func TestWithEncoding(t *testing.T) {
	srv := dispatch.NewServer()
	e := dispatch.Encoding{Name: "protobuf", Args: "pkg.Req", Reply: "pkg.Res", Origin: "gRPC method /pkg.S/M"}
	raw := func(ctx context.Context, a, r *codec.Raw) error { return nil }
	require.NoError(t, dispatch.Handle(srv, "S.M", raw, dispatch.WithEncoding(e)))
	require.NoError(t, dispatch.HandleStream(srv, "S.Stream", func(ctx context.Context, s *dispatch.ServerStream[[]byte, codec.Raw]) error { return nil }, dispatch.WithEncoding(e)))
	require.NoError(t, dispatch.Handle(srv, "S.Plain", raw))
	for _, name := range []string{"S.M", "S.Stream"} {
		info, ok := srv.Method(name)
		require.True(t, ok)
		require.NotNil(t, info.Encoding)
		assert.Equal(t, e, *info.Encoding)
		info.Encoding.Name = "changed"
	}
	info, _ := srv.Method("S.M")
	assert.Equal(t, "protobuf", info.Encoding.Name)
	assert.Equal(t, "protobuf pkg.Req → pkg.Res (gRPC method /pkg.S/M)", info.Encoding.String())
	info, _ = srv.Method("S.Plain")
	assert.Nil(t, info.Encoding)

	err := dispatch.Handle(srv, "S.Typed", func(ctx context.Context, a *int, r *codec.Raw) error { return nil }, dispatch.WithEncoding(e))
	assert.ErrorContains(t, err, "WithEncoding describes raw bodies (codec.Raw, []byte, a codec.RawBody), not int and codec.Raw")
	err = dispatch.Handle(srv, "S.Nameless", raw, dispatch.WithEncoding(dispatch.Encoding{}))
	assert.ErrorContains(t, err, "the encoding has no name")
	err = srv.RegisterName("Arith", new(Arith), dispatch.WithEncoding(e))
	assert.ErrorContains(t, err, "WithEncoding describes one method of raw bodies: give it to Handle or HandleStream")
}
