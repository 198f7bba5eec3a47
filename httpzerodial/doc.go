// Package httpzerodial serves every method and stream of a dispatch.Server
// over HTTP, through connect-go: the Connect protocol (a unary call is a
// plain POST with a JSON body, which curl and a web page's fetch can make),
// gRPC and gRPC-Web, over HTTP/1.1 and HTTP/2 (h2c or TLS). The tests call
// it with connect-go's and grpc-go's clients, the curl binary, and a page in
// a headless Chromium (where the machine has one).
//
// NewHandler returns an http.Handler that answers "/Service/Method" for
// every method "Service.Method" the Server has — registered before or
// after — with the method's own Go types, in JSON ("application/json",
// "application/connect+json", "application/grpc+json", ...) or in msgpack
// ("+msgpack"), the codec zerodial's wire uses. A method of raw bodies
// (codec.Raw, []byte or a codec.RawBody each way: RawBodies) is served in Protobuf too
// ("application/proto", "application/grpc", "+proto"), its bytes handed
// through as they come: so a gRPC service registered through grpczerodial,
// whose handlers decode their own messages, answers grpc-go's and
// connect-go's clients and their generated code, beside the generated
// client calling it in process. connect-go does all of the
// protocols' work: envelopes, compression, timeouts from
// Connect-Timeout-Ms and grpc-timeout, the error formats, headers and
// trailers; this package decodes each message into the method's types and
// hands the call to the Server (dispatch.Server.Invoke and InvokeStream),
// so that it takes the same router, interceptor chains, panic rule, error
// words and Shutdown as a call on any other path:
//
//   - A handler's CallInfo has Path dispatch.PathHTTP, the peer's address
//     (RemoteAddr), the server's (LocalAddr) and, over HTTPS, the TLS state.
//   - Request headers are the call's metadata (MetadataFrom), their names
//     in lower case, several values joined by ", ", without the headers of
//     HTTP and of the protocols themselves (Content-Type, Connect-*, Grpc-*,
//     ...). Reply metadata (SetReplyMetadata) goes back as response headers
//     of a unary call; of a stream, what the handler set before it was
//     ready (Ready, or its first message) goes in the response headers, and
//     the rest in the trailers. A reply key "key#t" is a trailer's entry,
//     of a unary call too, and "key#1", "key#2", ... further values of
//     "key": the form in which grpczerodial carries gRPC's headers and
//     trailers. A binary key's values (a name ending in "-bin", gRPC's and
//     Connect's rule) cross in base64, and are the bytes on both sides.
//   - The handler's context carries the request's deadline and ends when
//     the request does (the client went away, its deadline passed). The
//     deadline bounds the reading of the request's body too: a body that
//     stalls is answered with deadline_exceeded once it passes, over
//     HTTP/1.1 and HTTP/2 (the read is given it through
//     http.ResponseController, which net/http's servers support; a
//     ResponseWriter that middleware wraps must Unwrap to it).
//   - Codes map both ways by name: dispatch's codes are Connect's and
//     gRPC's (ConnectCode, DispatchCode). A code of a handler's own that
//     neither knows goes as unknown. A method the Server does not have is
//     not_found, in the router's words, but to a gRPC request in Protobuf
//     (a gRPC client's own), which gets unimplemented, as gRPC's servers
//     answer it.
//   - An error's details (dispatch.ErrorDetail) go as the protocol's error
//     details, each a google.protobuf.Any holding the msgpack value under
//     DetailTypeURLPrefix and the detail's type name (a detail whose type is
//     a type URL already, a gRPC status's, goes as that Any); details over
//     dispatch.MaxErrorDetailsSize make the internal error every path gets.
//   - Arguments that do not fit their type are refused with
//     invalid_argument in the codec's words, which name the field: msgpack's
//     (codec.FieldError), encoding/json's. A JSON object none of whose
//     keys names a field of the struct it is decoded into is a message of
//     another type, refused as msgpack's map is (codec.ErrNoFieldsMatched,
//     "the object's keys [...] name no field of type T"), arguments and
//     stream messages alike. A Server made dispatch.WithStrictDecoding refuses a field the arguments' type does
//     not have, in JSON (json.Decoder.DisallowUnknownFields) and msgpack
//     (codec.StrictUnmarshaler) alike; a stream's messages are decoded as
//     without it, as on the Server's other paths.
//   - Once the Server's Shutdown has begun, new calls are answered with
//     unavailable and the calls in flight finish; the http.Server's own
//     Shutdown stops the HTTP side.
//   - A message larger than the read limit (WithReadMaxBytes, by default
//     the 4 MiB frame limit of zerodial's wire) is refused with
//     resource_exhausted as soon as that is known: unread when a unary
//     Connect call's Content-Length (its body is its message) or a
//     message's envelope (a stream's, gRPC's, gRPC-Web's) announces it,
//     and otherwise once the limit and one byte more are read. (connect-go
//     alone reads such a message whole, into nothing, before it refuses
//     it.)
//   - Compression is each protocol's own, gzip (connect-go's, its
//     decompression bounded as below): a request compressed by its client
//     (Content-Encoding for a unary Connect call, Connect-Content-Encoding
//     for a Connect stream, Grpc-Encoding for gRPC and gRPC-Web) is
//     inflated, and the answer is compressed whenever the client says it
//     takes gzip (Accept-Encoding, Connect-Accept-Encoding,
//     Grpc-Accept-Encoding), however small: connect-go's handlers have no
//     floor unless given one (connect.WithCompressMinBytes, through
//     WithConnectOptions). The read limit applies after decompression: a
//     small request that inflates beyond it is refused with
//     resource_exhausted once the limit and one byte more have come out
//     of the decompressor, which inflates at most its window, 32 KiB,
//     ahead of what it gives; it is neither held whole nor inflated to its
//     end (connect-go's own gzip would inflate the rest, into nothing, to
//     say how large it was: a thousand times a gzip bomb's size in work).
//     A compression named "gzip" given through WithConnectOptions takes
//     the place of the Handler's.
//   - Every refusal carries a Connect error body, JSON with the code and a
//     message a person can read: connect-go's 405 (an HTTP method other
//     than POST) and 415 (a Content-Type it does not serve), which it
//     sends bare, get one saying what to send instead (unimplemented).
//
// Dial is the other end: a dispatch.Client whose calls and streams go
// over HTTP to a base URL through connect-go's client, so that a program
// calls a service reached only over HTTP with the code it calls it with
// over any path (typed descriptors, OpenStream, CallStream, interceptors,
// replicas); its doc says what differs.
//
// Describe serves the list of the methods with the JSON Schema of what each
// takes and gives, for a person with curl to know what to send. The health
// service (package health) is a Server's methods like any, so it answers at
// /Health/Check too. A Handler can share the port of zerodial's wire: an
// http.Server serving the HTTP kinds of a fallback.Listener
// (tcp.WithFallback) takes the HTTP/1.1 and h2c clients of that port.
//
// A streaming method (dispatch.HandleStream) is served as a bidirectional
// stream over HTTP/2, which carries every shape — server-, client- and
// bidi-streaming — and as a server stream over HTTP/1.1 (one message from
// the caller, any number back), since HTTP/1.1 cannot carry both
// directions at once. A Connect request in the other shape than its
// method's (a unary call of a streaming method, a stream of a unary one)
// is refused with the code of dispatch's shape rule, invalid_argument, in
// words that say how to make the call over HTTP; a gRPC request does not
// say its shape, and connect-go answers it. The response headers of a
// stream say its handler is ready, as dispatch's Established does: they go
// when the handler calls Ready (alone, before any message), sends its
// first message, or returns. So a caller whose wait ends with the headers
// — connect-go's CallServerStream and ResponseHeader, a gRPC stub's
// Header — has the guarantee dispatch's Open gives.
//
// A server stream is followed from a shell with the command-line client
// (cmd/zerodial), each message printed as a line of JSON:
//
//	zerodial stream http://127.0.0.1:8080 Ticks.Count '{"N":2}'
//
// or with curl, whose request is the message after a 5-byte envelope (a
// zero byte, then the message's length in 4 bytes, big-endian: here 7)
// and whose answer is the messages in the same envelopes, then the end of
// the stream (flags 2) with its error or its trailers in JSON:
//
//	printf '\0\0\0\0\7{"N":2}' | curl -sN -H 'Content-Type: application/connect+json' --data-binary @- http://127.0.0.1:8080/Ticks/Count | cat -v
package httpzerodial
