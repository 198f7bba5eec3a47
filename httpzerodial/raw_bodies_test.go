package httpzerodial_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// A method of raw bodies (codec.Raw) is served in Protobuf too, its bytes
// handed through as they come, for a handler that decodes them itself (a
// gRPC service's, through grpczerodial): connect-go's client, with its
// default Protobuf codec, in each protocol, sends a message the handler
// receives encoded and gets the handler's bytes back as its reply.
func TestRawBodiesServedInProtobuf(t *testing.T) {
	srv := dispatch.NewServer()
	var got []codec.Raw
	require.NoError(t, dispatch.Handle(srv, "Echo.Bytes", func(ctx context.Context, args, reply *codec.Raw) error {
		got = append(got, append(codec.Raw(nil), *args...))
		*reply = append((*reply)[:0], *args...)
		return nil
	}))
	info, _ := srv.Method("Echo.Bytes")
	assert.True(t, httpzerodial.RawBodies(info))
	ts := serve(t, srv)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			got = nil
			opts := []connect.ClientOption{}
			if p.option != nil {
				opts = append(opts, p.option)
			}
			cl := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](httpClient(t, p.h2), ts.URL+"/Echo/Bytes", opts...)
			res, err := cl.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("hello")))
			require.NoError(t, err)
			assert.Equal(t, "hello", res.Msg.GetValue())
			// StringValue's encoding: field 1, length 5, the string.
			assert.Equal(t, []codec.Raw{{0x0a, 5, 'h', 'e', 'l', 'l', 'o'}}, got)
		})
	}

	// A method of Go types is not: Protobuf is refused, as before.
	newCalc(t, srv)
	cl := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](httpClient(t, false), ts.URL+"/Calc/Add")
	_, err := cl.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("hello")))
	assert.Error(t, err)
}

// Metadata of a binary key (a name ending in "-bin", gRPC's and Connect's
// rule) crosses HTTP as base64 and reaches the handler as the bytes the
// caller set, and the handler's binary reply metadata reaches connect-go
// in base64; a reply key of the form "key#t" is a trailer's entry, and
// "key#1" a second value.
func TestBinaryMetadata(t *testing.T) {
	srv := dispatch.NewServer()
	var seen dispatch.Metadata
	require.NoError(t, dispatch.Handle(srv, "Meta.Echo", func(ctx context.Context, args *Pair, reply *int) error {
		seen = dispatch.MetadataFrom(ctx)
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"back-bin": "\x00\x01\xff", "why#t": "one", "why#t1": "two", "answer": "a", "answer#1": "b"})
	}))
	ts := serve(t, srv)
	cl := client[Pair, int](t, ts, protocols[0], "/Meta/Echo")
	req := connect.NewRequest(&Pair{})
	req.Header().Set("Token-Bin", connect.EncodeBinaryHeader([]byte{0xab, 0xab, 0xab}))
	res, err := cl.CallUnary(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "\xab\xab\xab", seen["token-bin"])
	back, err := connect.DecodeBinaryHeader(res.Header().Get("Back-Bin"))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 0xff}, back)
	assert.Equal(t, []string{"one", "two"}, res.Trailer().Values("Why"))
	assert.Equal(t, []string{"a", "b"}, res.Header().Values("Answer"))

	// The HTTP Client sends and reads binary metadata the same way.
	c, err := httpzerodial.Dial(context.Background(), ts.URL)
	require.NoError(t, err)
	defer c.Close()
	var md dispatch.Metadata
	ctx := dispatch.CaptureReplyMetadata(dispatch.WithMetadata(context.Background(), dispatch.Metadata{"token-bin": "\x00\n\xff"}), &md)
	require.NoError(t, c.Call(ctx, "Meta.Echo", Pair{}, new(int)))
	assert.Equal(t, "\x00\n\xff", seen["token-bin"])
	assert.Equal(t, "\x00\x01\xff", md["back-bin"])
}

// The reply metadata a stream's handler sets before it is ready goes in
// the response headers, which a caller reads before the stream's end (a
// gRPC stub's Header); what it sets later goes in the trailers.
func TestStreamHeaderMetadata(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.HandleStream(srv, "Watch.Ticks", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		if err := dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"early": "yes", "tail#t": "kept"}); err != nil {
			return err
		}
		s.Ready()
		for range s.Recv() {
		}
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"late": "yes"})
	}))
	ts := serve(t, srv)
	cl := client[Pair, int](t, ts, protocols[1], "/Watch/Ticks")
	st := cl.CallBidiStream(context.Background())
	require.NoError(t, st.Send(nil))
	h := st.ResponseHeader()
	assert.Equal(t, "yes", h.Get("Early"))
	assert.Empty(t, h.Get("Tail"))
	require.NoError(t, st.CloseRequest())
	_, err := st.Receive()
	require.Error(t, err)
	require.NoError(t, st.CloseResponse())
	tr := st.ResponseTrailer()
	assert.Equal(t, "yes", tr.Get("Late"))
	assert.Equal(t, "kept", tr.Get("Tail"))
	assert.Empty(t, tr.Get("Early"))
}
