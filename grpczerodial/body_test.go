package grpczerodial

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// A body encodes its message straight into the buffer it is given, and
// keeps a copy of what it receives, in a buffer of the pool, until
// released.
func TestBodyEncodesInPlace(t *testing.T) {
	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("abc")}, ResponseSize: 3}
	want, err := proto.Marshal(req)
	require.NoError(t, err)

	b := body{Msg: req}
	dst := make([]byte, 1, 256)
	out, err := b.AppendBody(dst)
	require.NoError(t, err)
	assert.Equal(t, want, out[1:])
	assert.Same(t, &dst[0], &out[0], "encoded in the buffer given")
	scratch := make([]byte, 0, 256)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = b.AppendBody(scratch) }))

	var got body
	require.NoError(t, got.SetBody(out[1:]))
	out[1] ^= 0xff
	var m testpb.SimpleRequest
	require.NoError(t, got.decode(&m, true, "test", ""))
	assert.True(t, proto.Equal(req, &m), "decoded from a copy of what it received")
	enc, err := got.AppendBody(nil)
	require.NoError(t, err)
	assert.Equal(t, want, enc, "a body received is sent on as it came")
	got.release()
	assert.Nil(t, got.Buf)
	assert.Nil(t, got.Enc)

	bad := body{Msg: &testpb.SimpleResponse{Username: "\xff"}}
	_, err = bad.AppendBody(nil)
	require.Error(t, err, "proto3 strings must be UTF-8")
}

// decode of a body that passed as a message lends its fields when asked
// to, deep-copies them otherwise, and goes through the encoding for
// another Go type of the message.
func TestBodyDecodesMessage(t *testing.T) {
	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("abc")}, ResponseSize: 3}
	b := body{Msg: req}

	var lent testpb.SimpleRequest
	require.NoError(t, b.decode(&lent, true, "test", ""))
	assert.Same(t, req.Payload, lent.Payload)

	copied := &testpb.SimpleRequest{FillUsername: true}
	require.NoError(t, b.decode(copied, false, "test", ""))
	assert.True(t, proto.Equal(req, copied), "reset, then merged: FillUsername is gone")
	assert.NotSame(t, &req.Payload.Body[0], &copied.Payload.Body[0])

	enc, err := proto.Marshal(req)
	require.NoError(t, err)
	var want, other testpb.SimpleResponse // another message: the request's encoding read as it
	require.NoError(t, proto.Unmarshal(enc, &want))
	require.NoError(t, b.decode(&other, true, "test", ""))
	assert.True(t, proto.Equal(&want, &other))

	require.Error(t, b.decode(struct{}{}, true, "test", ""))
	require.NoError(t, b.decode(nil, true, "test", ""), "no message wanted")
}

// lend gives dst src's fields without copying what they hold: messages,
// bytes, lists, maps and unknown fields are shared; it refuses another
// Go type, and allocates nothing for a message of scalars and
// sub-messages.
func TestLend(t *testing.T) {
	src := &testpb.StreamingOutputCallRequest{
		Payload:            &testpb.Payload{Body: []byte("abc")},
		ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 2}},
		ResponseType:       testpb.PayloadType_COMPRESSABLE,
	}
	src.ProtoReflect().SetUnknown([]byte{0xf8, 0x7f, 1}) // field 2047, varint 1
	dst := &testpb.StreamingOutputCallRequest{ResponseStatus: &testpb.EchoStatus{Code: 3}}
	require.True(t, lend(dst, src))
	assert.Same(t, src.Payload, dst.Payload)
	assert.Same(t, &src.ResponseParameters[0], &dst.ResponseParameters[0])
	assert.Equal(t, testpb.PayloadType_COMPRESSABLE, dst.ResponseType)
	assert.Nil(t, dst.ResponseStatus, "reset first")
	assert.Equal(t, src.ProtoReflect().GetUnknown(), dst.ProtoReflect().GetUnknown())

	s := &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}
	var d structpb.Struct
	require.True(t, lend(&d, s))
	d.Fields["added"] = structpb.NewBoolValue(true)
	assert.Contains(t, s.Fields, "added", "the map is shared")

	assert.False(t, lend(&testpb.SimpleResponse{}, &testpb.SimpleRequest{}))

	v := structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(1)}})
	var lv structpb.Value // a oneof: its wrapper is lent
	require.True(t, lend(&lv, v))
	assert.Same(t, v.GetListValue(), lv.GetListValue())
	assert.True(t, proto.Equal(v, &lv))

	dyn := dynamicpb.NewMessage(src.ProtoReflect().Descriptor()) // no Go struct: through protoreflect
	proto.Merge(dyn, src)
	into := dynamicpb.NewMessage(src.ProtoReflect().Descriptor())
	require.True(t, lend(into, dyn))
	assert.True(t, proto.Equal(dyn, into))

	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("abc")}, ResponseSize: 3}
	var lent testpb.SimpleRequest
	assert.Zero(t, testing.AllocsPerRun(100, func() { lend(&lent, req) }))
}

// A nil message lends as an empty one.
func TestLendNil(t *testing.T) {
	dst := &testpb.SimpleRequest{ResponseSize: 3}
	require.True(t, lend(dst, (*testpb.SimpleRequest)(nil)))
	assert.True(t, proto.Equal(&testpb.SimpleRequest{}, dst))
}

// A message can be lent while another goroutine marshals it, which stores
// its size cache: lend reads no field that Marshal writes (under -race,
// this fails if it did).
func TestLendWhileMarshalled(t *testing.T) {
	src := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("abc")}, ResponseSize: 3}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			if _, err := proto.Marshal(src); err != nil {
				panic(err)
			}
		}
	}()
	for range 1000 {
		var dst testpb.SimpleRequest
		require.True(t, lend(&dst, src))
		require.EqualValues(t, 3, dst.GetResponseSize())
	}
	<-done
}

// embedded is a reply of another Go type for the same message, as a caller
// may pass to Invoke: its ProtoReflect is the embedded message's. guard
// follows the pointer, where the message struct has its fields.
type embedded struct {
	*testpb.SimpleResponse
	guard [8]uint64
}

// lend fills a dst of another Go type for src's message through
// protoreflect: the typed copy of the fields is for dst and src of one Go
// type. It wrote src's fields over what follows the embedded pointer (the
// guard, here; past the end of a smaller struct, the heap).
func TestLendOtherGoType(t *testing.T) {
	src := &testpb.SimpleResponse{Username: "u", OauthScope: "s", Payload: &testpb.Payload{Body: []byte("abc")}}
	dst := &embedded{SimpleResponse: new(testpb.SimpleResponse)}
	require.True(t, lend(dst, src))
	assert.Equal(t, [8]uint64{}, dst.guard, "lend wrote past the embedded pointer")
	assert.True(t, proto.Equal(src, dst.SimpleResponse), "%v", dst.SimpleResponse)
}
