package codec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Msgpack encodes values as MessagePack with
// github.com/vmihailenco/msgpack/v5. Its name on the wire is "msgpack".
//
// Unmarshal validates the body before decoding it (see MaxDepth,
// ErrMalformed and ErrTooDeep) and never keeps a reference to the body.
// Msgpack also implements Appender. []byte and Raw values pass through
// untouched, and so do RawBody values; see Raw.
var Msgpack Codec = msgpackCodec{}

// maxPooledBuffer is the largest scratch buffer kept for reuse. A rare large
// message should not pin its buffer for the life of the process.
const maxPooledBuffer = 64 << 10

type msgpackCodec struct{}

func (msgpackCodec) Name() string { return "msgpack" }

func (msgpackCodec) Marshal(v any) ([]byte, error) {
	if b, ok, err := rawBytes(v); ok {
		return b, err
	}
	e := getEncoder()
	defer putEncoder(e)
	if err := e.encode(v); err != nil {
		return nil, err
	}
	// Copy out of the pooled buffer so that it can be reused: one
	// allocation of exactly the right size.
	return bytes.Clone(e.w.b), nil
}

func (msgpackCodec) AppendMarshal(dst []byte, v any) ([]byte, error) {
	if rb, ok := v.(RawBody); ok {
		b, err := rb.AppendBody(dst)
		if err != nil {
			return dst, err
		}
		return b, nil
	}
	if b, ok, err := rawBytes(v); ok {
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
	e := getEncoder()
	scratch := e.w.b
	e.w.b = dst
	err := e.encode(v)
	out := e.w.b
	e.w.b = scratch // the caller's buffer must not stay in the pool
	putEncoder(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (msgpackCodec) Unmarshal(data []byte, v any) error { return unmarshal(data, v, false) }

// UnmarshalStrict is Unmarshal, except that a map key naming no field of
// the struct it is decoded into is refused with a *FieldError that is
// ErrUnknownField, where Unmarshal ignores it (StrictUnmarshaler).
func (msgpackCodec) UnmarshalStrict(data []byte, v any) error { return unmarshal(data, v, true) }

func unmarshal(data []byte, v any, strict bool) error {
	if ok, err := unmarshalRaw(data, v); ok {
		return err
	}
	if v == nil {
		return fmt.Errorf("%w: cannot unmarshal into nil", ErrNilPointer)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return fmt.Errorf("%w: cannot unmarshal into a nil %T", ErrNilPointer, v)
	}
	err := decode(data, v, strict)
	switch {
	case err == nil:
		return checkFieldsMatched(data, v)
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrTooDeep):
		return err
	case reflect.TypeOf(v).Kind() != reflect.Pointer:
		return fmt.Errorf("codec: cannot unmarshal into %T: %w", v, err)
	}
	return explain(data, v, strict, err)
}

// appendWriter is the io.Writer the pooled encoder writes to. It has a
// WriteByte method so that msgpack uses it directly instead of wrapping it in
// an adapter that allocates a byte slice per call.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *appendWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

type encoder struct {
	w   appendWriter
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = msgpack.NewEncoder(&e.w)
	return e
}}

func getEncoder() *encoder {
	e := encoders.Get().(*encoder)
	e.w.b = e.w.b[:0]
	// Reset clears every option as well as the writer. This codec keeps the
	// library's defaults, so that its output is exactly msgpack.Marshal's
	// and a value decoded into an interface encodes back to the same types;
	// an option added later must be set here, after Reset, on every use, or
	// it would apply only to the messages that happen to get a fresh encoder.
	e.enc.Reset(&e.w)
	return e
}

func putEncoder(e *encoder) {
	if cap(e.w.b) > maxPooledBuffer {
		e.w.b = nil
	}
	encoders.Put(e)
}

func (e *encoder) encode(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return fmt.Errorf("codec: cannot marshal %T: %w", v, err)
	}
	return nil
}

type decoder struct {
	r   guardedReader
	dec *msgpack.Decoder
}

var decoders = sync.Pool{New: func() any {
	d := new(decoder)
	d.dec = msgpack.NewDecoder(nil)
	return d
}}

// getDecoder returns a pooled decoder. The caller sets its reader's guards
// and data and calls Reset.
//
// No decoder option is set after Reset, on purpose. In particular
// UsePreallocateValues, which msgpack.Unmarshal turns on, starts a goroutine
// per decoded type that never ends, and the library's alloc limit stays on
// as a second line of defence behind validate.
func getDecoder() *decoder {
	return decoders.Get().(*decoder)
}

func putDecoder(d *decoder) {
	// Resetting the reader drops the body; the decoder refers to nothing
	// but that reader, pooled with it, and is Reset before every use.
	d.r.reset(nil)
	if cap(d.r.guards) > maxPooledBuffer/8 {
		d.r.guards = nil
	}
	decoders.Put(d)
}
