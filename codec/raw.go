package codec

import (
	"fmt"
	"reflect"
)

// Raw is a body that is already encoded, as a json.RawMessage is JSON
// already. Codecs pass it through untouched instead of encoding it, so an
// RPC method can take and return opaque bytes (an encoding of its own, a
// file chunk) without paying for a second encoding or learning the codec's
// framing of binary data.
//
// Msgpack treats exactly the types []byte, Raw, *[]byte and *Raw this
// way; other types whose underlying type is []byte are encoded as msgpack
// bin values like any other value:
//
//   - Marshal of one of them returns the bytes as they are: it may return
//     the very slice it was given, so the caller must not change those bytes
//     while the result is in use. AppendMarshal appends them to dst.
//   - Unmarshal into a *[]byte or *Raw copies the body into the target,
//     reusing the target's capacity: *p = append((*p)[:0], data...). The
//     body is not interpreted, so it is not checked either.
//   - A nil *[]byte or *Raw is an error wrapping ErrNilPointer for both.
//
// Marshal sees only the dynamic type, so a []byte inside an interface passes
// through too. In particular, a msgpack bin value decoded into an interface
// is a []byte, which Marshal then returns as it is rather than encoding it
// as bin again; convert it to another byte-slice type to encode it.
type Raw []byte

// RawBody is implemented by a value that holds a body encoded by other
// means than the codec (a protobuf message, say): Msgpack passes it
// through as it does Raw, so that the body is encoded once, straight into
// the sender's buffer, and decoded once, by the value itself.
//
//   - Marshal returns AppendBody(nil); AppendMarshal returns
//     AppendBody(dst).
//   - Unmarshal into a RawBody calls SetBody with the body, which must not
//     keep data once it returns, as Unmarshal itself must not.
//
// grpczerodial's unary calls carry their messages this way.
type RawBody interface {
	// AppendBody appends the body's encoding to dst and returns the
	// extended slice, as append does.
	AppendBody(dst []byte) ([]byte, error)
	// SetBody takes data, a body received, as the value's own. It must not
	// keep a reference to data.
	SetBody(data []byte) error
}

// rawBytes reports whether v is a pass-through body and returns its bytes.
func rawBytes(v any) (b []byte, ok bool, err error) {
	switch v := v.(type) {
	case RawBody:
		b, err := v.AppendBody(nil)
		return b, true, err
	case []byte:
		return v, true, nil
	case Raw:
		return v, true, nil
	case *[]byte:
		if v == nil {
			return nil, true, fmt.Errorf("%w: cannot marshal a nil %T", ErrNilPointer, v)
		}
		return *v, true, nil
	case *Raw:
		if v == nil {
			return nil, true, fmt.Errorf("%w: cannot marshal a nil %T", ErrNilPointer, v)
		}
		return *v, true, nil
	}
	return nil, false, nil
}

// unmarshalRaw copies data into a pass-through target. It reports false when
// v is not one, so that the caller decodes instead.
func unmarshalRaw(data []byte, v any) (ok bool, err error) {
	switch p := v.(type) {
	case RawBody:
		return true, p.SetBody(data)
	case *[]byte:
		if p == nil {
			return true, fmt.Errorf("%w: cannot unmarshal into a nil %T", ErrNilPointer, v)
		}
		*p = append((*p)[:0], data...)
		return true, nil
	case *Raw:
		if p == nil {
			return true, fmt.Errorf("%w: cannot unmarshal into a nil %T", ErrNilPointer, v)
		}
		*p = append((*p)[:0], data...)
		return true, nil
	}
	return false, nil
}

var rawBodyType = reflect.TypeFor[RawBody]()

// PassesThrough reports whether Msgpack passes values of type t through
// as bodies encoded already, rather than encoding them: Raw, []byte, and
// the types whose values or pointers are RawBodies. A method whose
// arguments and reply are such types takes and returns bodies of another
// encoding (dispatch.WithEncoding says which), which a protocol may hand
// through as they come (httpzerodial serves them in Protobuf too).
func PassesThrough(t reflect.Type) bool {
	if t == nil {
		return false
	}
	return t == reflect.TypeFor[Raw]() || t == reflect.TypeFor[[]byte]() ||
		t.Implements(rawBodyType) || reflect.PointerTo(t).Implements(rawBodyType)
}
