package httpzerodial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// message is a request or reply as connect-go carries it: one message's
// bytes, in the codec named, which this package decodes into the method's
// Go types itself, so that connect-go needs no schema.
type message struct {
	data  []byte
	codec string
}

// passCodec is the connect.Codec of a codec name: it hands a message's
// bytes through, and records which codec they are in.
type passCodec struct{ name string }

func (c passCodec) Name() string { return c.name }

func (c passCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*message)
	if !ok {
		return nil, fmt.Errorf("httpzerodial: cannot marshal %T", v)
	}
	return m.data, nil
}

func (c passCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*message)
	if !ok {
		return fmt.Errorf("httpzerodial: cannot unmarshal into %T", v)
	}
	// connect-go reuses data once Unmarshal returns.
	m.data = append(m.data[:0], data...)
	m.codec = c.name
	return nil
}

// noProto refuses Protobuf for a method's messages, which connect-go's
// clients send by default: a method's types are Go types, not Protobuf
// messages. connect-go's own messages (a gRPC error's details) are
// Protobuf's still, as connect-go asks of a codec named "proto".
type noProto struct{}

func (noProto) Name() string { return "proto" }

func (noProto) Marshal(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return proto.Marshal(m)
	}
	return nil, errNoProto
}

func (noProto) Unmarshal(data []byte, v any) error {
	if m, ok := v.(proto.Message); ok {
		return proto.Unmarshal(data, m)
	}
	return errNoProto
}

var errNoProto = fmt.Errorf("httpzerodial: Protobuf is not served; send JSON (application/json, +json) or msgpack (+msgpack)")

// rawProto serves Protobuf for a method of raw bodies (RawBodies): a
// message's bytes are handed through as they are, to a handler that
// decodes them itself (a gRPC service's, registered through grpczerodial),
// and its reply's bytes back. connect-go's own messages are Protobuf's, as
// noProto's.
type rawProto struct{ noProto }

func (rawProto) Marshal(v any) ([]byte, error) {
	if m, ok := v.(*message); ok {
		return m.data, nil
	}
	return noProto{}.Marshal(v)
}

func (rawProto) Unmarshal(data []byte, v any) error {
	if m, ok := v.(*message); ok {
		return passCodec{codecProto}.Unmarshal(data, m)
	}
	return noProto{}.Unmarshal(data, v)
}

// RawBodies reports whether a method's arguments and reply (a stream's
// messages each way) are raw bodies — codec.Raw, []byte, or a type that
// encodes and decodes itself (codec.RawBody, as grpczerodial's unary
// methods' are) — which the Handler hands through as they come in every
// codec, Protobuf included.
func RawBodies(info dispatch.MethodInfo) bool {
	return codec.PassesThrough(info.Args) && codec.PassesThrough(info.Reply)
}

// The codec names served: JSON (with the charset parameter Connect allows
// on a unary call) and msgpack.
const (
	codecJSON        = "json"
	codecJSONCharset = "json; charset=utf-8"
	codecMsgpack     = "msgpack"
	codecProto       = "proto"
)

// codecOf returns the codec name of a request's Content-Type, for a stream,
// whose messages say nothing of it before the first arrives:
// "application/connect+json" and "application/grpc-web+msgpack; x=y" name
// json and msgpack, "application/grpc" and "+proto" proto (which only a
// method of RawBodies is served in).
func codecOf(contentType string) string {
	switch _, c := kindOf(contentType); c {
	case codecMsgpack, codecProto:
		return c
	}
	return codecJSON
}

// decode decodes data, in the codec named, into v, a pointer to a method's
// argument or message type. An empty message is the zero value, as a call
// with nil arguments is on every path. strict refuses a field v's type
// does not have, as the Server's other paths do when it was made
// WithStrictDecoding: msgpack's UnmarshalStrict, or encoding/json's
// DisallowUnknownFields.
func decode(name string, data []byte, v any, strict bool) error {
	switch {
	case name == codecProto:
		// Raw bodies (RawBodies): the bytes as they are, which msgpack
		// passes through (codec.Raw).
		return codec.Msgpack.Unmarshal(data, v)
	case len(data) == 0:
		return nil
	case name == codecMsgpack && strict:
		return codec.Msgpack.(codec.StrictUnmarshaler).UnmarshalStrict(data, v)
	case name == codecMsgpack:
		return codec.Msgpack.Unmarshal(data, v)
	case strict && json.Valid(data):
		// Valid first, so that a syntax error, or a second value after
		// the first, is refused in Unmarshal's words: the Decoder reads
		// one value and would leave the rest unread.
		d := json.NewDecoder(bytes.NewReader(data))
		d.DisallowUnknownFields()
		return d.Decode(v)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return jsonFieldsMatched(data, v)
}

// jsonFieldsMatched is msgpack's "no fields matched" rule
// (codec.ErrNoFieldsMatched) in JSON: a non-empty object decoded into a
// struct must name at least one of its fields. Keys the struct does not
// have, beside keys it has, are ignored, as encoding/json ignores them; an
// object none of whose keys fit is a message of another type, which the
// other paths refuse rather than decode as zero values. It runs only when
// decoding left the struct zero, the one case in which no key may have
// matched, and asks encoding/json, key by key, which keys the struct
// knows, so that its naming rules (tags, case folding, embedded fields)
// need not be copied here.
func jsonFieldsMatched(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	t := rv.Type().Elem()
	if t.Kind() != reflect.Struct || !rv.Elem().IsZero() {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil // null, or not an object
	}
	var keys []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil
		}
		// The key alone, its value null, which any field takes: only a
		// key the struct does not have can fail.
		probe, err := json.Marshal(map[string]any{key: nil})
		if err != nil {
			return nil
		}
		pd := json.NewDecoder(bytes.NewReader(probe))
		pd.DisallowUnknownFields()
		if pd.Decode(reflect.New(t).Interface()) == nil {
			return nil // a key the struct has
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil // {}
	}
	return fmt.Errorf("%w: the object's keys %q name no field of type %s", codec.ErrNoFieldsMatched, keys, t)
}

// encode encodes v, a pointer to a method's reply or message type, in the
// codec named, into bytes of its own. connect-go takes what Marshal
// returns into its buffer pool (and compresses out of it), so the bytes
// must not be the handler's: msgpack's Marshal hands a []byte or codec.Raw
// back as it is, where AppendMarshal to nil copies it (and encodes anything
// else straight into a new slice, as Marshal would).
func encode(name string, v any) ([]byte, error) {
	if name == codecMsgpack || name == codecProto {
		return codec.Msgpack.(codec.Appender).AppendMarshal(nil, v)
	}
	return json.Marshal(v)
}
