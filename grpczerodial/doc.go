// Package grpczerodial runs gRPC services, as protoc-gen-go-grpc generates
// them, on zerodial: a Registrar (a grpc.ServiceRegistrar) registers a
// service on a dispatch.Server unchanged — pb.RegisterFooServer(reg, impl)
// — and a ClientConn (a grpc.ClientConnInterface) lets a generated client
// — pb.NewFooClient(cc) — call it through a dispatch.Client, over any path:
// the in-process shortcut (copy or direct), memory, tcp, mux.
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
//     TLS, a credentials.TLSInfo.
//   - gRPC's interceptors: unary and stream, server (WithUnaryInterceptors,
//     WithStreamInterceptors) and client (WithUnaryClientInterceptors,
//     WithStreamClientInterceptors), run on every path, inside dispatch's.
//
// What differs: call options that change what is sent (per-call
// credentials, a forced codec or content subtype) are refused, and those
// with no meaning off grpc-go's transport are ignored (ClientConn says
// which). Messages are protobuf's binary encoding.
package grpczerodial
