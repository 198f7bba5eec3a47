// Package grpczerodial runs gRPC services, as protoc-gen-go-grpc generates
// them, on zerodial: a Registrar (a grpc.ServiceRegistrar) registers a
// service on a dispatch.Server unchanged — pb.RegisterFooServer(reg, impl)
// — and a ClientConn (a grpc.ClientConnInterface) lets a generated client
// — pb.NewFooClient(cc) — call it through a dispatch.Client, over any path:
// the in-process shortcut (copy or direct), memory, tcp (over TCP or a
// unix socket), mux, shm, and HTTP (a Client of httpzerodial.Dial).
//
// Over HTTP too: httpzerodial's Handler serves the same Server's methods,
// in Protobuf (their bodies are raw, httpzerodial.RawBodies), at gRPC's own
// paths, "/pkg.Service/Method", so that grpc-go's client (grpc.NewClient,
// over h2c or TLS) and connect-go's reach the handler that the generated
// client calls in process — a gateway's shape. Headers and trailers,
// binary metadata, deadlines and a status with its details cross as gRPC
// says; several values of one request header reach the handler as one,
// joined by ", ", as HTTP folds them. And the other way: a ClientConn over
// a Client of httpzerodial.Dial calls those methods over HTTP (Connect,
// gRPC or gRPC-Web), with gRPC's interop cases passing as on every other
// path, but for what HTTP itself merges: a failed call's header and
// trailer cross as one set (connect-go merges an error's headers and
// trailers, and a gRPC response with no message is trailers-only), which
// the ClientConn gives as its header (a key in both has the trailer's
// value); and a stream's Send of a message
// over the Handler's read limit ends the stream, whose end says
// ResourceExhausted, where the other paths refuse the message alone.
//
// Each method of a service "pkg.Service" is the Server's method
// "pkg.Service.Method", so it takes the Server's router, interceptor
// chains, limits, panic rule, health and Shutdown as any other method; its
// arguments and reply are the messages' protobuf encodings (a
// codec.RawBody), so caller and handler never share a message. On the
// direct shortcut nothing is encoded: the messages are deep-copied, or
// lent, with no copy, to and from a method registered with Borrows (which
// says what is shared, and for how long). What gRPC's API gives a handler
// and a caller is kept:
//
//   - Errors: a handler's status reaches the caller's status.FromError with
//     its code, message and details; dispatch's own refusals carry the
//     same codes by name, and a method or service the Server lacks is
//     Unimplemented, as gRPC says it.
//   - Metadata: the caller's outgoing metadata is the handler's incoming
//     (metadata.FromIncomingContext) and the call's dispatch metadata, so
//     dispatch interceptors read it too; headers and trailers that a
//     handler sets (grpc.SetHeader, SendHeader, SetTrailer, and a stream's
//     own) reach the grpc.Header and grpc.Trailer call options and a
//     stream's Header and Trailer. A stream's header is sent before its
//     first message, so Header returns before the stream ends.
//   - Deadlines and cancellation: the caller's context bounds the call, on
//     every path, and the handler's context ends with it.
//   - peer.FromContext in a handler gives the caller's address (dispatch's
//     CallInfo.RemoteAddr: dispatch.ShortcutAddr on the shortcut) and, over
//     TLS, a credentials.TLSInfo; a caller's grpc.Peer, of a call or a
//     stream, the address of the Server it went to.
//   - gRPC's interceptors: unary and stream, server (WithUnaryInterceptors,
//     WithStreamInterceptors) and client (WithUnaryClientInterceptors,
//     WithStreamClientInterceptors), run on every path, inside dispatch's.
//
// A failure is a status (status.FromError, status.Code) that wraps
// dispatch's error: errors.Is sees dispatch.ErrShutdown,
// transport.ErrFrameTooLarge and the context's errors, and errors.As the
// *dispatch.Error. A call given grpc.ForceCodec encodes its messages with
// that codec, for a method of the Server's own codec (Go types in
// msgpack): code written against grpc.ClientConnInterface calls any
// dispatch method so, and the conformance suite (dispatchtest) runs
// through a ClientConn.
//
// What differs: call options that change what is sent (per-call
// credentials, a content subtype) are refused, and those with no meaning
// off grpc-go's transport are ignored (ClientConn says which). Messages
// are protobuf's binary encoding unless a codec is forced.
package grpczerodial
