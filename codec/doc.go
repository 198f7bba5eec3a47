// Package codec turns Go values into message bodies and back, and adapts a
// transport.Socket to net/rpc.
//
// A Codec encodes one value per body. Msgpack, the default, is built on
// github.com/vmihailenco/msgpack/v5 and adds two guarantees the library does
// not give on its own:
//
//   - Bounded decoding. A body is checked in one non-recursive pass before it
//     is decoded, so a few hostile bytes that declare a 2 GiB string or a
//     billion-element array fail with ErrMalformed instead of making the
//     decoder pre-allocate for what was declared, and nesting deeper than
//     MaxDepth fails with ErrTooDeep instead of recursing without bound.
//     Extension data, which the check cannot see into, is never read as
//     msgpack values. What a body may allocate is therefore proportional
//     to its real size — with a factor set by the target type: an array
//     holds at most one element per byte of body, and decoding it into a
//     []T allocates len × the size of T, so a 1 KiB T lets a 4 MiB body ask
//     for 4 GiB. Bound the frame size by what your largest element type can
//     afford (each transport's WithMaxFrameSize option).
//   - No aliasing. Unmarshal never keeps a reference to the body it decodes,
//     so callers may reuse that buffer at once (transport Sockets do).
//   - Errors that say where. A body that does not fit its Go type fails with
//     a *FieldError naming the field, what the body holds there and the type
//     the field wants ("field Qty: got string "three", want int64"), found by
//     a second walk of the body on the failure path only.
//
// Unknown map keys are ignored, so that a message may gain fields its reader
// does not know yet; UnmarshalStrict (StrictUnmarshaler) refuses them with
// ErrUnknownField, for a server that wants a misspelled field refused
// rather than dropped (dispatch.WithStrictDecoding).
//
// Bodies that are already encoded pass through untouched: a []byte or Raw
// (or a pointer to one) is the body itself, not something to encode, and a
// RawBody encodes and decodes itself. See Raw.
//
// NewClientCodec and NewServerCodec carry net/rpc over any transport.Socket,
// one Message per request and per response, with the header keys of the
// project's RPC wire format (WIRE.md, section 3).
package codec
