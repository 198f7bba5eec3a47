package grpczerodial

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	"github.com/zerodial/transport/dispatch"
)

// A call given grpc.ForceCodec or grpc.ForceCodecV2 encodes its messages
// with that codec rather than protobuf's, and carries them as they are (a
// body's encoding, or codec.Raw on a stream, which dispatch hands
// through): the handler is the Server's, which decodes them with the
// Server's codec — msgpack, unless the Server was given another. So a
// generated client, or any code written against grpc.ClientConnInterface,
// calls methods of Go types registered with dispatch (Handle, Register),
// given a codec that encodes as the Server decodes. A stream opened so
// reads the handler's messages as they are, as any dispatch caller does:
// the handler's header comes with the stream's end.

// forcedCodec is the codec a call forced, either version.
type forcedCodec struct {
	v1 encoding.Codec
	v2 encoding.CodecV2
}

func (f *forcedCodec) name() string {
	if f.v2 != nil {
		return f.v2.Name()
	}
	return f.v1.Name()
}

// marshal appends m's encoding to dst.
func (f *forcedCodec) marshal(dst []byte, m any, what string) ([]byte, error) {
	var err error
	if f.v2 != nil {
		var bs mem.BufferSlice
		if bs, err = f.v2.Marshal(m); err == nil {
			for _, b := range bs {
				dst = append(dst, b.ReadOnlyData()...)
			}
			bs.Free()
			return dst, nil
		}
	} else {
		var b []byte
		if b, err = f.v1.Marshal(m); err == nil {
			return append(dst, b...), nil
		}
	}
	return nil, &dispatch.Error{Code: dispatch.CodeInternal, Message: fmt.Sprintf("grpczerodial: encoding %s with codec %s: %v", what, f.name(), err)}
}

// unmarshal decodes b into m. The codec gets bytes of its own, as grpc-go
// gives a codec: it may keep them (a proxy's frame codec does), and b is a
// buffer of the pool, or a stream's frame, that the next call or message
// reuses (TestForceCodecKeepsItsBytes).
func (f *forcedCodec) unmarshal(b []byte, m any, what string) error {
	b = append([]byte(nil), b...)
	var err error
	if f.v2 != nil {
		err = f.v2.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m)
	} else {
		err = f.v1.Unmarshal(b, m)
	}
	if err != nil {
		return &dispatch.Error{Code: dispatch.CodeInternal, Message: fmt.Sprintf("grpczerodial: decoding %s with codec %s: %v", what, f.name(), err)}
	}
	return nil
}

// marshal encodes m with the call's codec: protobuf's, or the one forced.
func (co *callOpts) marshal(dst []byte, m any, what string) ([]byte, error) {
	if co.codec != nil {
		return co.codec.marshal(dst, m, what)
	}
	return marshal(dst, m, what)
}

// unmarshal decodes b into m with the call's codec; a failure names
// what+of, as unmarshal's does.
func (co *callOpts) unmarshal(b []byte, m any, what, of string) error {
	if co.codec != nil {
		return co.codec.unmarshal(b, m, what+of)
	}
	return unmarshal(b, m, what, of)
}

// request makes req the body of a unary call's request: args itself
// (body.request), or, with a codec forced, its encoding in that codec,
// which goes as it is.
func (co *callOpts) request(req *body, args any, method string) error {
	if co.codec == nil {
		return req.request(args, method)
	}
	enc, err := co.codec.marshal(nil, args, "arguments of "+method)
	req.Enc = enc
	return err
}

// reply decodes a unary call's reply, out, into reply: as body.decode
// does, or, with a codec forced, the encoding received in that codec.
func (co *callOpts) reply(out *body, reply any, method string) error {
	if co.codec == nil || out.Msg != nil {
		return out.decode(reply, out.Lent, "reply of ", method)
	}
	return co.codec.unmarshal(out.Enc, reply, "reply of "+method)
}
