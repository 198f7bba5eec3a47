package dispatch

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/zerodial/transport/codec"
)

// Encoding says what the bytes of a method of raw bodies hold — a method
// whose arguments and reply (a stream's messages each way) are codec.Raw,
// []byte or a codec.RawBody (codec.PassesThrough), which every path
// carries as they are — for whoever lists a
// Server's methods (package describe, rpcdebug, cmd/zerodial's list), so
// that such a method is not shown as bytes without a word. grpczerodial
// registers each gRPC method with one: protobuf, the messages' full
// names, and the method's gRPC name.
type Encoding struct {
	// Name is how the bytes are encoded: "protobuf".
	Name string `json:"name" msgpack:"name"`
	// Args and Reply name what the bytes hold, in the encoding's terms
	// ("grpc.testing.SimpleRequest"): the arguments and the reply, or
	// each message of a stream from the caller and from the handler.
	// Empty when unknown.
	Args  string `json:"args,omitempty" msgpack:"args,omitempty"`
	Reply string `json:"reply,omitempty" msgpack:"reply,omitempty"`
	// Origin says what the method is where it comes from, for a person:
	// "gRPC method /grpc.testing.TestService/UnaryCall".
	Origin string `json:"origin,omitempty" msgpack:"origin,omitempty"`
}

// String says it in a line: "protobuf grpc.testing.SimpleRequest →
// grpc.testing.SimpleResponse (gRPC method /grpc.testing.TestService/UnaryCall)".
func (e Encoding) String() string {
	s := e.Name
	if e.Args != "" || e.Reply != "" {
		s += " " + e.Args + " → " + e.Reply
	}
	if e.Origin != "" {
		s += " (" + e.Origin + ")"
	}
	return s
}

// WithEncoding says what the raw bodies of the method being registered
// hold (Encoding), for Handle and HandleStream of a method whose types are
// codec.Raw, []byte or a codec.RawBody each way (codec.PassesThrough); any
// other registration with it fails.
// It changes nothing of how the method is called: MethodInfo reports it.
func WithEncoding(e Encoding) RegisterOption {
	return func(o *registerOptions) { o.encoding = &e }
}

var errEncodingOne = errors.New("dispatch: WithEncoding describes one method of raw bodies: give it to Handle or HandleStream")

// checkEncoding refuses an Encoding for a method whose types in and out
// are not raw bodies.
func (o registerOptions) checkEncoding(in, out reflect.Type) error {
	if o.encoding == nil {
		return nil
	}
	if o.encoding.Name == "" {
		return errors.New("dispatch: WithEncoding: the encoding has no name")
	}
	if !codec.PassesThrough(in) || !codec.PassesThrough(out) {
		return fmt.Errorf("dispatch: WithEncoding describes raw bodies (codec.Raw, []byte, a codec.RawBody), not %s and %s", in, out)
	}
	return nil
}
