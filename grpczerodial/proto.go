package grpczerodial

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/zerodial/transport/dispatch"
)

// Messages are encoded with protobuf's binary encoding, once each way on
// every path but the direct shortcut (body.go): the caller's message and
// the handler's never share memory (proto.Unmarshal copies what it reads),
// so a caller that changes its request after the call, or a handler that
// keeps its reply, changes nothing the other end sees. On the direct
// shortcut they share memory only for a method registered with Borrows.

// marshal appends m's encoding to dst.
func marshal(dst []byte, m any, what string) ([]byte, error) {
	if m == nil {
		return dst, nil // no message: an empty one, as grpc-go's codec encodes it
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, &dispatch.Error{Code: dispatch.CodeInternal, Message: fmt.Sprintf("grpczerodial: encoding %s: %T is not a proto.Message", what, m)}
	}
	b, err := proto.MarshalOptions{}.MarshalAppend(dst, pm)
	if err != nil {
		return nil, &dispatch.Error{Code: dispatch.CodeInternal, Message: fmt.Sprintf("grpczerodial: encoding %s: %v", what, err)}
	}
	return b, nil
}

// unmarshal decodes b into m, which it resets first. Its failure names
// what it decoded, what+of ("reply of " and a method), words made only
// then.
func unmarshal(b []byte, m any, what, of string) error {
	if m == nil {
		return nil // no message wanted: the encoding is dropped
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return &dispatch.Error{Code: dispatch.CodeInternal, Message: fmt.Sprintf("grpczerodial: decoding %s%s: %T is not a proto.Message", what, of, m)}
	}
	if err := proto.Unmarshal(b, pm); err != nil {
		return &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: fmt.Sprintf("grpczerodial: decoding %s%s: %v", what, of, err)}
	}
	return nil
}
