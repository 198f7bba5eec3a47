// Package otelzerodial traces and measures zerodial calls with OpenTelemetry:
// a Server interceptor and a Client interceptor (dispatch.Interceptor) that
// make one span and one duration measurement per call, on every path a call
// can take — memory, tcp, mux, and the in-process shortcut in copy and
// direct mode — and carry the caller's trace context and baggage to the
// handler in the call's metadata.
//
//	srv := dispatch.NewServer(dispatch.WithInterceptors(otelzerodial.ServerInterceptor()))
//	c, err := dispatch.Dial(ctx, tr, addr, dispatch.WithInterceptors(otelzerodial.ClientInterceptor()))
//
// Streams get the same from StreamServerInterceptor and
// StreamClientInterceptor (dispatch.StreamInterceptor), one span and one
// measurement per stream, from its opening to its end:
//
//	srv := dispatch.NewServer(dispatch.WithStreamInterceptors(otelzerodial.StreamServerInterceptor()))
//	c, err := dispatch.Dial(ctx, tr, addr, dispatch.WithStreamInterceptors(otelzerodial.StreamClientInterceptor()))
//
// By default they all use the global TracerProvider, MeterProvider and
// TextMapPropagator (go.opentelemetry.io/otel); WithTracerProvider,
// WithMeterProvider and WithPropagators choose others. Put the interceptor
// first in the chain, so that its span covers the others.
//
// # Conventions
//
// Spans and metrics follow OpenTelemetry's RPC semantic conventions v1.43.0
// (go.opentelemetry.io/otel/semconv/v1.43.0, the newest shipped with otel
// v1.47.0), the release candidate that replaces v1.37's experimental RPC
// conventions: rpc.system.name
// rather than rpc.system, the fully-qualified method in rpc.method rather than
// rpc.service and rpc.method apart, the status in rpc.response.status_code,
// and durations in seconds in rpc.server.call.duration and
// rpc.client.call.duration rather than the milliseconds of the older
// rpc.server.duration.
//
// A span is named after the method, "Service/Method" (zerodial's
// "Arith.Multiply" is "Arith/Multiply"; a service name that holds dots
// keeps them, as a gRPC package does). Its kind is Server or Client. Its
// attributes:
//
//   - rpc.system.name: "zerodial". zerodial speaks its own protocol (WIRE.md),
//     which none of the conventions' well-known values (grpc, connectrpc,
//     dubbo, jsonrpc) describes, and the conventions allow a system of its
//     own; both ends of a call are zerodial.
//   - rpc.method: "Service/Method", as in the span's name.
//   - zerodial.path (PathKey): the way the call went — "memory", "tcp",
//     "mux", "shortcut-copy", "shortcut-direct", "http" for a call over
//     HTTP (httpzerodial's Client and Handler), or "netrpc" for a call
//     carried by a net/rpc codec (Server.ServeCodec, dispatch.DialCodec)
//     (dispatch.CallInfo.Path). On the Client it is the path the Client
//     meant to take when the span starts, corrected when the call returns.
//     Over net/rpc no trace context crosses (it carries no metadata), so the
//     Server span starts a trace of its own, and a handler's code reaches
//     the Client as text only: its span reads UNKNOWN unless the words are
//     ones dispatch.NewCodecClient knows.
//   - Client: server.address and server.port, from the address dialled
//     (the port only when the address has one: a memory address has none;
//     of a base URL, its host and its port, or its scheme's).
//   - Server: network.peer.address and network.peer.port, when the peer's
//     address is an IP address (tcp, mux, and http: the request's remote
//     address, a proxy's when there is one); a memory socket's peer and the
//     shortcut's (dispatch.ShortcutAddr) have none.
//   - rpc.response.status_code: "OK", or the call's dispatch.Code, spelled
//     as gRPC spells its codes ("NOT_FOUND", "DEADLINE_EXCEEDED", "CANCELLED"
//     for dispatch.CodeCanceled, "UNKNOWN" for dispatch.CodeUnknown); a code
//     of the service's own is recorded as it is.
//   - error.type: when the call failed, its status code — or, on a Client
//     whose call failed before a status came back, "shutdown" (the
//     connection failed: dispatch.ErrShutdown), "nil_reply"
//     (dispatch.ErrNilReply) or the error's Go type (semconv.ErrorType).
//
// Which codes are failures follows the gRPC conventions: on a Client every
// error is, and the span's status is Error with the error's message; on a
// Server only UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL,
// UNAVAILABLE, DATA_LOSS and codes of the service's own are — a handler
// answering NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED and the like did
// its job, and its span's status stays unset. A handler that panics (or ends
// its goroutine) ends its span as INTERNAL, as dispatch answers it; the
// panic goes on to dispatch unrecovered, so its stack is logged as without
// the interceptor.
//
// A method the Server does not have is answered by its router before any
// interceptor runs, so it makes no Server span. The Client learns it from the
// answer (CodeNotFound in net/rpc's words, or CodeInvalidArgument for an
// ill-formed name) and then records rpc.method as "_OTHER", the name called
// in rpc.method_original, and names its span "zerodial", as the conventions
// ask, so that a caller's mistakes do not become metric series.
//
// # Propagation
//
// The Client interceptor injects the span's context with the propagators
// into the call's metadata (dispatch.WithMetadata; with W3C trace context and
// baggage, the keys traceparent, tracestate and baggage), and the Server
// interceptor extracts it from the caller's (dispatch.MetadataValue, which
// copies nothing). The default, the global propagator, propagates nothing
// until it is set, as everywhere in OpenTelemetry:
//
//	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
//		propagation.TraceContext{}, propagation.Baggage{}))
//
// or give both ends WithPropagators. Metadata is the one part of a caller's context
// that reaches a handler, on every path, the shortcut included, so a
// Server span is the child of the Client span wherever the call goes, and a
// handler's own spans are children of the Server span. MetadataCarrier
// adapts dispatch.Metadata for doing the same by hand.
//
// # Metrics
//
// rpc.server.call.duration and rpc.client.call.duration: float64
// histograms in seconds, with the conventions' bucket boundaries, each
// measurement equal to its span's duration. Their attributes:
// rpc.system.name, rpc.method, rpc.response.status_code, error.type when
// the call failed, zerodial.path, and on the Client server.address and
// server.port. The conventions define no size metrics (the older
// rpc.server.request.size and its kin are gone from them), and an
// interceptor sees decoded values, not the bytes sent, so none are recorded.
package otelzerodial
