package dispatch

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/clone"
	"github.com/zerodial/transport/internal/flow"
)

// A call's body: its arguments, its reply, a stream's messages, encoded
// and decoded the same way on every path that has a body — the network's
// two ends, the shortcut's copy mode (copyCall, which runs each codec once
// each way) — and the words of their failures, which every path shares.
// What the body travels with, the headers, is wire.go's; its size is the
// frame limit's to bound (internal/frame, and shortcut_limits.go on the
// shortcut).
//
// Arguments: encodeArgs on a Client, decodeArgs on a Server (decodeError
// for a protocol that decodes them itself), planArgs's deep copy in direct
// mode. Replies: encodeReply on a Server, decodeReply on a Client. Stream
// messages: encodeMsg and decodeMsg, on both ends.

// encodeArgs appends the body of a request to dst. Nil arguments (nil, or a
// nil pointer) are an empty body, which the server reads as zero arguments:
// the same as the handler receives on the shortcut, whatever the type.
func encodeArgs(c codec.Codec, dst []byte, name string, args any) ([]byte, error) {
	if isNil(args) {
		return dst, nil
	}
	b, err := appendMarshal(c, dst, args)
	if err != nil {
		return dst, fmt.Errorf("dispatch: encoding arguments of %s: %w", name, err)
	}
	return b, nil
}

// isNil reports whether v is nil or a nil pointer: arguments encodeArgs
// sends as an empty body.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// decodeArgs decodes a request's body into args, its failure worded the
// same on every path (argsError): the codec's words, which for msgpack
// name the field that does not fit (codec.FieldError). strict is the
// Server's WithStrictDecoding.
func decodeArgs(c codec.Codec, strict bool, m *method, body []byte, args any) *Error {
	if len(body) == 0 {
		return nil // nil arguments: the handler gets zero ones (encodeArgs)
	}
	var err error
	if su, ok := c.(codec.StrictUnmarshaler); strict && ok {
		err = su.UnmarshalStrict(body, args)
	} else {
		err = c.Unmarshal(body, args)
	}
	if err != nil {
		return argsError(m.name, err)
	}
	return nil
}

// argsError is the refusal of arguments that cannot be decoded, in the
// words of every path.
func argsError(name string, err error) *Error {
	return &Error{Code: CodeInvalidArgument, Message: "dispatch: decoding arguments of " + name + ": " + err.Error()}
}

// decodeError is the refusal of a call whose arguments the protocol could
// not decode: its *Error as is, anything else in decodeArgs's words.
func decodeError(name string, err error) *Error {
	var e *Error
	if errors.As(err, &e) && e != nil {
		return &Error{Code: e.Code, Message: e.Message}
	}
	return argsError(name, err)
}

// planArgs marks m as borrowing and sets m.copyArgs for arguments of type a.
// A type that cannot be deep-copied is refused: a direct call would lend
// such arguments when its context cannot end and have to encode them when
// it can, and the handler would see the difference.
func (m *method) planArgs(a reflect.Type, flatCopy func(dst, src any)) error {
	plan, err := clone.For(a)
	if err != nil {
		return fmt.Errorf("dispatch: Borrows: the arguments of %s cannot be deep-copied, as a direct call "+
			"that may return before its handler must copy them (%w); register %s without Borrows", m.name, err, m.name)
	}
	m.borrows = true
	switch {
	case plan.Flat():
		m.copyArgs = func(dst, src any) error { flatCopy(dst, src); return nil }
	default:
		m.copyArgs = func(dst, src any) error {
			return plan.Copy(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem())
		}
	}
	return nil
}

// appendMarshal encodes v with c into dst, without allocating when c can
// append.
func appendMarshal(c codec.Codec, dst []byte, v any) ([]byte, error) {
	if a, ok := c.(codec.Appender); ok {
		return a.AppendMarshal(dst, v)
	}
	b, err := c.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// encodeReply appends the encoding of reply, the reply of name, to dst. A
// reply that cannot be encoded is answered with CodeInternal (encodeError)
// on every path.
func encodeReply(c codec.Codec, dst []byte, name string, reply any) ([]byte, *Error) {
	b, err := appendMarshal(c, dst, reply)
	if err != nil {
		return b, encodeError(name, err)
	}
	return b, nil
}

// encodeError words a reply that cannot be encoded, as decodeArgs words
// arguments: the codec's words.
func encodeError(name string, err error) *Error {
	return &Error{Code: CodeInternal, Message: fmt.Sprintf("dispatch: encoding reply of %s: %v", name, err)}
}

// decodeReply decodes a response body into reply, which Call has zeroed; an
// empty body leaves it zero.
func decodeReply(c codec.Codec, name string, body []byte, reply any) error {
	if len(body) == 0 {
		return nil
	}
	if err := c.Unmarshal(body, reply); err != nil {
		zero(reply)
		return decodeReplyError(name, err)
	}
	return nil
}

// decodeReplyError words a reply that cannot be decoded, the same on every
// path. It is not an *Error: the call succeeded, the caller's types are
// wrong.
func decodeReplyError(name string, err error) error {
	return fmt.Errorf("dispatch: decoding reply of %s: %w", name, err)
}

// encodeMsg appends the encoding of a stream's message m to dst.
func encodeMsg(c codec.Codec, dst []byte, name string, m any) ([]byte, error) {
	b, err := appendMarshal(c, dst, m)
	if err != nil {
		return dst, fmt.Errorf("dispatch: encoding a message of %s: %w", name, err)
	}
	return b, nil
}

// decodeMsg returns the message of it as a *T: the sender's own value in
// direct mode, or the body decoded into *buf, zeroed first.
func decodeMsg[T any](c codec.Codec, buf *T, it flow.Item) (*T, error) {
	if it.Ptr != nil {
		return it.Ptr.(*T), nil
	}
	switch b := any(buf).(type) {
	case *[]byte:
		*b = (*b)[:0] // a raw body is copied in whole, into the same array
	case *codec.Raw:
		*b = (*b)[:0]
	default:
		var zero T
		*buf = zero
	}
	if len(it.Body) > 0 {
		if err := c.Unmarshal(it.Body, buf); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// argsTooLarge is the error a caller gets for arguments over its own
// transport's frame limit.
func argsTooLarge(name string, err error) error {
	return fmt.Errorf("dispatch: arguments of %s: %w", name, err)
}

// replyTooLarge is the error a caller gets for a reply over the server's
// frame limit.
func replyTooLarge(name string, err error) *Error {
	return &Error{Code: CodeInternal, Message: "dispatch: reply of " + name + " is too large: " + err.Error()}
}

// msgTooLarge is the error of a Send whose message is over the frame limit;
// nothing was sent, and the stream goes on.
func msgTooLarge(name string, err error) error {
	return fmt.Errorf("dispatch: message of %s: %w", name, err)
}
