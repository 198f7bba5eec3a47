package grpczerodial

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// body is a unary call's request or reply as dispatch carries it: the
// message itself where no codec runs (the direct shortcut), and its
// protobuf encoding where one does (the network, copy mode), which body
// writes and reads itself as a codec.RawBody, so that a message is
// encoded once, straight into the buffer dispatch sends, and the bytes a
// codec hands over are copied once, into a buffer of the pool.
//
// It serves BenchmarkGRPCGenerated's Unary rows: on the direct shortcut,
// where the request and reply pass as messages (lend); on every other
// path, where the encoding and its copies were most of a 64 KiB call.
//
// Its fields are exported because dispatch deep-copies the arguments of a
// direct call whose context can end (dispatch.Borrows): a Msg it cannot
// copy (a generated message) makes that call run as copy mode, which
// encodes it.
type body struct {
	// Msg is the message: the caller's request (set by the ClientConn),
	// or the handler's reply (set by the Registrar's handler). Nil when
	// the body came through a codec.
	Msg proto.Message
	// Enc is the encoding received through a codec, in Buf, a buffer of
	// the pool that release gives back.
	Enc []byte
	Buf *[]byte
	// Lent is set with a reply's Msg by a method that borrows (Borrows):
	// on the direct shortcut, the caller's reply may share its fields.
	Lent bool
}

var _ codec.RawBody = (*body)(nil)

// AppendBody appends the protobuf encoding of the message, or the
// encoding received, to dst.
func (b *body) AppendBody(dst []byte) ([]byte, error) {
	if b.Msg == nil {
		return append(dst, b.Enc...), nil
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, b.Msg)
	if err != nil {
		return dst, &dispatch.Error{Code: dispatch.CodeInternal, Message: fmt.Sprintf("grpczerodial: encoding %T: %v", b.Msg, err)}
	}
	return out, nil
}

// SetBody keeps a copy of data, the encoding received, in a buffer of the
// pool.
func (b *body) SetBody(data []byte) error {
	if b.Buf == nil {
		b.Buf = getBuf()
	}
	*b.Buf = append((*b.Buf)[:0], data...)
	b.Msg, b.Enc, b.Lent = nil, *b.Buf, false
	return nil
}

// decode fills m from the body: the encoding received, unmarshalled, or —
// a body that passed as a message — the message itself, lent (shared
// fields) when lent is true, deep-copied otherwise. Its failure names
// what+of, as unmarshal's does.
func (b *body) decode(m any, lent bool, what, of string) error {
	if b.Msg == nil || m == nil {
		return unmarshal(b.Enc, m, what, of) // no message wanted: nothing to do
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return &dispatch.Error{Code: dispatch.CodeInternal, Message: fmt.Sprintf("grpczerodial: decoding %s%s: %T is not a proto.Message", what, of, m)}
	}
	if lent && lend(pm, b.Msg) {
		return nil
	}
	if pm.ProtoReflect().Descriptor() == b.Msg.ProtoReflect().Descriptor() {
		proto.Reset(pm)
		proto.Merge(pm, b.Msg)
		return nil
	}
	// Another Go type of the message (dynamicpb's, say): through its
	// encoding.
	enc, err := b.AppendBody(nil)
	if err != nil {
		return err
	}
	return unmarshal(enc, m, what, of)
}

// release gives the buffer of the encoding received back to the pool.
func (b *body) release() {
	if b.Buf != nil {
		putBuf(b.Buf)
		b.Buf, b.Enc = nil, nil
	}
}

// errNoJSON refuses a gRPC method's messages in JSON, over HTTP: they are
// protobuf's, and are served in Protobuf alone (no protojson), rather than
// as the fields of body.
var errNoJSON = errors.New("grpczerodial: a gRPC method's messages are protobuf: call it in Protobuf (application/proto, application/grpc), not JSON")

// MarshalJSON refuses: see errNoJSON.
func (b *body) MarshalJSON() ([]byte, error) { return nil, errNoJSON }

// UnmarshalJSON refuses: see errNoJSON.
func (b *body) UnmarshalJSON([]byte) error { return errNoJSON }
