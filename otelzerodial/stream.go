package otelzerodial

import (
	"context"

	"go.opentelemetry.io/otel/semconv/v1.43.0/rpcconv"

	"github.com/zerodial/transport/dispatch"
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
		ctx, span, start, key := ins.startServer(ctx, method)
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
		ctx, span, start, key, _ := ins.startClient(ctx, method)
		return ctx, func(err error) { ins.finish(ctx, span, start, key, clientOutcome(err)) }, nil
	}
}
