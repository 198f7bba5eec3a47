package otelzerodial_test

import (
	"context"
	"fmt"
	"log"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/otelzerodial"
)

// Both ends instrumented, here with a TracerProvider that keeps its spans
// in memory; without options the interceptors use otel's globals
// (otel.SetTracerProvider, otel.SetMeterProvider, otel.SetTextMapPropagator).
func Example() {
	spans := tracetest.NewSpanRecorder()
	opts := []otelzerodial.Option{
		otelzerodial.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))),
		otelzerodial.WithPropagators(propagation.TraceContext{}),
	}

	srv := dispatch.NewServer(dispatch.WithInterceptors(otelzerodial.ServerInterceptor(opts...)))
	_ = dispatch.Handle(srv, "Arith.Multiply", func(_ context.Context, a *Args, r *int) error { *r = a.A * a.B; return nil })
	tr := memory.New()
	l, _ := tr.Listen("")
	_ = srv.Start(l)
	defer srv.Close()

	ctx := context.Background()
	c, err := dispatch.Dial(ctx, tr, l.Addr().String(), dispatch.WithInterceptors(otelzerodial.ClientInterceptor(opts...)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var product int
	if err := c.Call(ctx, "Arith.Multiply", Args{6, 7}, &product); err != nil {
		log.Fatal(err)
	}

	server, client := spans.Ended()[0], spans.Ended()[1]
	fmt.Println(product)
	fmt.Println(client.SpanKind(), client.Name())
	fmt.Println(server.SpanKind(), server.Name(), "child of the client span:", server.Parent().SpanID() == client.SpanContext().SpanID())
	// Output:
	// 42
	// client Arith/Multiply
	// server Arith/Multiply child of the client span: true
}
