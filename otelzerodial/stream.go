package otelzerodial

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/semconv/v1.43.0/rpcconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/zerodial/transport/dispatch"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// StreamServerInterceptor returns a dispatch.StreamInterceptor for a
// Server (dispatch.NewServer(dispatch.WithStreamInterceptors(...))): each
// stream it serves gets a Server span, from the stream's opening to its
// end, the child of the caller's span when the caller's metadata carries
// one, and an rpc.server.call.duration measurement of the same length.
// Attributes and statuses are a unary call's.
func StreamServerInterceptor(opts ...Option) dispatch.StreamInterceptor {
	ins := newInstruments(opts, rpcconv.NewServerCallDuration)
	return func(ctx context.Context, method string) (context.Context, func(error), error) {
		info, _ := dispatch.CallInfoFrom(ctx)
		ctx = ins.prop.Extract(ctx, MetadataCarrier(dispatch.MetadataFrom(ctx)))
		name := ins.name(method)
		var buf [5]attribute.KeyValue
		attrs := append(buf[:0], systemAttr, name.attr, PathKey.String(string(info.Path)))
		attrs = appendPeer(attrs, info.RemoteAddr)
		start := time.Now()
		ctx, span := ins.tracer.Start(ctx, name.span, serverKind, trace.WithAttributes(attrs...))
		key := setKey{method: name.span, path: string(info.Path)}
		return ctx, func(err error) { ins.finish(ctx, span, start, key, serverOutcome(err)) }, nil
	}
}

// StreamClientInterceptor returns a dispatch.StreamInterceptor for a
// Client (dispatch.Dial(ctx, tr, addr, dispatch.WithStreamInterceptors(...))):
// each stream it opens gets a Client span, from OpenStream to the stream's
// end, the child of the span in the stream's context, whose context and
// baggage travel to the Server in the stream's metadata, and an
// rpc.client.call.duration measurement of the same length. zerodial.path is
// the path the Client means to take when the stream opens.
func StreamClientInterceptor(opts ...Option) dispatch.StreamInterceptor {
	ins := newInstruments(opts, rpcconv.NewClientCallDuration)
	return func(ctx context.Context, method string) (context.Context, func(error), error) {
		info, _ := dispatch.CallInfoFrom(ctx)
		name := ins.name(method)
		host, port := serverOf(info.RemoteAddr)
		var buf [5]attribute.KeyValue
		attrs := append(buf[:0], systemAttr, name.attr, PathKey.String(string(info.Path)))
		if host != "" {
			attrs = append(attrs, semconv.ServerAddress(host))
			if port != 0 {
				attrs = append(attrs, semconv.ServerPort(port))
			}
		}
		start := time.Now()
		ctx, span := ins.tracer.Start(ctx, name.span, clientKind, trace.WithAttributes(attrs...))
		ctx = ins.inject(ctx)
		key := setKey{method: name.span, path: string(info.Path), server: host, port: port}
		return ctx, func(err error) { ins.finish(ctx, span, start, key, clientOutcome(err)) }, nil
	}
}
