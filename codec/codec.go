package codec

// Codec encodes values into message bodies and decodes them back. A Codec
// must be safe for concurrent use, since one is shared by every connection
// that selects it.
type Codec interface {
	// Name identifies the encoding on the wire, in the Content-Type header
	// of an RPC request, so that a server can refuse a body it would
	// misread.
	Name() string
	// Marshal returns the encoding of v. The result belongs to the caller.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes data into v, which must be a non-nil pointer. It
	// must not keep a reference to data once it returns: callers reuse
	// receive buffers.
	Unmarshal(data []byte, v any) error
}

// Appender is implemented by codecs that can encode into a caller's buffer.
// It is optional and found by type assertion, so that senders that reuse one
// buffer per connection avoid an allocation per message while codecs without
// the ability still work.
type Appender interface {
	// AppendMarshal appends the encoding of v to dst and returns the
	// extended slice, as append does. On error it returns dst unchanged in
	// length, though bytes past len(dst) may have been written.
	AppendMarshal(dst []byte, v any) ([]byte, error)
}

// Default is the codec NewClientCodec and NewServerCodec use when WithCodec
// is not given. It is Msgpack; it is a variable only because Go has no
// interface constants, and it should not be reassigned.
var Default Codec = Msgpack

// StrictUnmarshaler is implemented by codecs that can refuse what a
// message holds beyond its type: a map key that names no field of the
// struct it is decoded into, which Unmarshal ignores so that a message may
// gain fields its reader does not know yet. It is optional and found by
// type assertion; a dispatch Server with WithStrictDecoding uses it for
// the arguments of calls. Msgpack implements it.
type StrictUnmarshaler interface {
	// UnmarshalStrict is Unmarshal, refusing unknown fields.
	UnmarshalStrict(data []byte, v any) error
}
