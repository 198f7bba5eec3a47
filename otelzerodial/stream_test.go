package otelzerodial_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/otelzerodial"
)

// TestStreams: on every path a stream gets a Client span and a Server
// span, the Server's the remote child of the Client's, which is the child
// of the caller's; the handler's context carries the Server span; a
// handler's error sets the status of both.
func TestStreams(t *testing.T) {
	forEachPath(t, func(t *testing.T, pc pathCase) {
		tel := newTelemetry(t, sdktrace.AlwaysSample())
		srv := dispatch.NewServer(dispatch.WithStreamInterceptors(otelzerodial.StreamServerInterceptor(tel.options()...)))
		t.Cleanup(func() { srv.Close() })
		err := dispatch.HandleStream(srv, "Trace.Stream", func(ctx context.Context, s *dispatch.ServerStream[int, string]) error {
			for n, err := range s.Recv() {
				if err != nil {
					return err
				}
				if *n < 0 {
					return &dispatch.Error{Code: dispatch.CodeInternal, Message: "boom"}
				}
				id := trace.SpanContextFromContext(ctx).SpanID().String()
				if err := s.Send(&id); err != nil {
					return err
				}
			}
			return nil
		}, dispatch.Borrows())
		if err != nil {
			t.Fatal(err)
		}
		c, _ := serveAndDial(t, pc, srv, dispatch.WithStreamInterceptors(otelzerodial.StreamClientInterceptor(tel.options()...)))

		ctx, caller := tel.tp.Tracer("test").Start(context.Background(), "caller")
		var seenID string
		for id, err := range dispatch.CallStream[int, string](ctx, c, "Trace.Stream", new(1)) {
			if err != nil {
				t.Fatal(err)
			}
			seenID = *id
		}
		caller.End()
		spans := tel.ended(t, 3)
		client, server := kind(t, spans, trace.SpanKindClient), kind(t, spans, trace.SpanKindServer)
		if got, want := client.Parent().SpanID(), caller.SpanContext().SpanID(); got != want {
			t.Errorf("client span's parent %s, want the caller's span %s", got, want)
		}
		if got, want := server.Parent().SpanID(), client.SpanContext().SpanID(); got != want || !server.Parent().IsRemote() {
			t.Errorf("server span's parent %s (remote %v), want the client span %s", got, server.Parent().IsRemote(), want)
		}
		if seenID != server.SpanContext().SpanID().String() {
			t.Errorf("the handler's context carried span %s, want the server span %s", seenID, server.SpanContext().SpanID())
		}
		for _, s := range []sdktrace.ReadOnlySpan{client, server} {
			a := attrs(s)
			if s.Name() != "Trace/Stream" || a[otelzerodial.PathKey] != attribute.StringValue(string(pc.path)) {
				t.Errorf("%s span %q with path %v, want Trace/Stream on %s", s.SpanKind(), s.Name(), a[otelzerodial.PathKey], pc.path)
			}
			if a["rpc.response.status_code"] != attribute.StringValue("OK") {
				t.Errorf("%s span status code %v, want OK", s.SpanKind(), a["rpc.response.status_code"])
			}
		}

		for _, err := range dispatch.CallStream[int, string](context.Background(), c, "Trace.Stream", new(-1)) {
			if err == nil {
				t.Fatal("a message from a failing handler")
			}
		}
		spans = tel.ended(t, 5)[3:]
		for _, k := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
			s := kind(t, spans, k)
			if a := attrs(s); a["rpc.response.status_code"] != attribute.StringValue("INTERNAL") || s.Status().Code.String() != "Error" {
				t.Errorf("%s span of a failed stream: status code %v, status %v", k, a["rpc.response.status_code"], s.Status())
			}
		}
	})
}
