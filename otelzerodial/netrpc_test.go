package otelzerodial_test

import (
	"context"
	"errors"
	"net"
	"net/rpc"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
	"github.com/zerodial/transport/otelzerodial"
)

// serveNetRPC serves srv to net/rpc's gob clients on a loopback listener
// (Server.ServeCodec) and returns its address.
func serveNetRPC(t *testing.T, srv *dispatch.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeCodec(gobrpc.NewServerCodec(c)) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		srv.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestNetRPC: over net/rpc's codecs the interceptors run at both ends, and
// their spans and metrics say Path "netrpc". What net/rpc cannot carry is
// missing, as documented: no trace context crosses (the Server span starts
// a trace of its own), and a handler's code reaches the Client as text only
// (its span reads UNKNOWN where the Server's reads INTERNAL).
func TestNetRPC(t *testing.T) {
	tel := newTelemetry(t, sdktrace.AlwaysSample())
	srv := dispatch.NewServer(dispatch.WithInterceptors(otelzerodial.ServerInterceptor(tel.options()...)))
	err := errors.Join(
		dispatch.Handle(srv, "Arith.Multiply", func(_ context.Context, a *Args, r *int) error {
			*r = a.A * a.B
			return nil
		}),
		dispatch.Handle(srv, "Arith.Fail", func(context.Context, *Args, *int) error {
			return &dispatch.Error{Code: dispatch.CodeInternal, Message: "boom"}
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveNetRPC(t, srv)
	c, err := dispatch.DialCodec(context.Background(), nil, "tcp", addr, gobrpc.ClientCodecFunc(),
		dispatch.WithInterceptors(otelzerodial.ClientInterceptor(tel.options()...)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	t.Run("result", func(t *testing.T) {
		tel.spans.Reset()
		var n int
		if err := c.Call(context.Background(), "Arith.Multiply", Args{6, 7}, &n); err != nil || n != 42 {
			t.Fatalf("Call: %d, %v", n, err)
		}
		spans := tel.ended(t, 2)
		client, server := kind(t, spans, trace.SpanKindClient), kind(t, spans, trace.SpanKindServer)
		for _, s := range []sdktrace.ReadOnlySpan{client, server} {
			if got := attrs(s)[otelzerodial.PathKey].AsString(); got != string(dispatch.PathNetRPC) {
				t.Errorf("%s span %s = %q, want %q", s.SpanKind(), otelzerodial.PathKey, got, dispatch.PathNetRPC)
			}
		}
		if server.Parent().IsValid() || server.SpanContext().TraceID() == client.SpanContext().TraceID() {
			t.Errorf("the Server span is in the Client's trace (parent %v): net/rpc carries no trace context", server.Parent())
		}
	})
	t.Run("handler error", func(t *testing.T) {
		tel.spans.Reset()
		err := c.Call(context.Background(), "Arith.Fail", Args{}, new(int))
		var de *dispatch.Error
		if !errors.As(err, &de) || de.Code != dispatch.CodeUnknown || de.Message != "boom" {
			t.Fatalf("Call: %v, want an *Error of code unknown and message boom", err)
		}
		spans := tel.ended(t, 2)
		checkSpan(t, kind(t, spans, trace.SpanKindClient), spanWant{"UNKNOWN", "UNKNOWN", codes.Error, "boom"})
		checkSpan(t, kind(t, spans, trace.SpanKindServer), spanWant{"INTERNAL", "INTERNAL", codes.Error, "boom"})
	})
	t.Run("standard library client", func(t *testing.T) {
		tel.spans.Reset()
		rc, err := rpc.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		var n int
		if err := rc.Call("Arith.Multiply", Args{2, 3}, &n); err != nil || n != 6 {
			t.Fatalf("Call: %d, %v", n, err)
		}
		s := kind(t, tel.ended(t, 1), trace.SpanKindServer)
		if got := attrs(s)[otelzerodial.PathKey].AsString(); got != string(dispatch.PathNetRPC) {
			t.Errorf("Server span %s = %q, want %q", otelzerodial.PathKey, got, dispatch.PathNetRPC)
		}
	})
}
