package codec

import (
	"errors"

	"github.com/zerodial/transport/internal/rpcwire"
)

// Sentinel errors. Errors returned by this package wrap them with details, so
// test with errors.Is.
var (
	// ErrMalformed reports a body that is not exactly one well-formed
	// msgpack value: truncated, followed by trailing bytes, using a reserved
	// type byte, or declaring a length or item count larger than the bytes
	// that are actually present. The wrapping error says what was declared
	// and what was present.
	ErrMalformed = errors.New("codec: malformed msgpack")

	// ErrTooDeep reports a body whose arrays and maps nest deeper than
	// MaxDepth.
	ErrTooDeep = errors.New("codec: msgpack nesting too deep")

	// ErrNilPointer reports a nil target for Unmarshal, or a nil *[]byte or
	// *Raw given to Marshal, where a panic would otherwise follow.
	ErrNilPointer = errors.New("codec: nil pointer")

	// ErrNoFieldsMatched reports a non-empty msgpack map decoded into a
	// struct none of whose fields its keys name: a message of another type
	// (gob's "no fields matched"). Unknown keys beside known ones are
	// ignored. It is checked when the struct is zero before decoding, as it
	// is on every RPC path (the net/rpc adapters zero a reply first).
	ErrNoFieldsMatched = errors.New("codec: no fields matched")

	// ErrMalformedHeader reports an RPC message whose headers cannot be
	// read, such as a missing or non-decimal Seq. The adapters return it
	// from ReadRequestHeader and ReadResponseHeader, which ends the
	// connection: a message whose sequence number is unknown cannot be
	// matched to its call.
	ErrMalformedHeader = rpcwire.ErrMalformed

	// ErrContentType is returned by a server codec's ReadRequestBody when
	// the request's Content-Type names another codec than the server's; the
	// caller gets it as an error response instead of a misread body.
	ErrContentType = errors.New("codec: unsupported content type")
)
