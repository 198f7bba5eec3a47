package otelzerodial_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/otelzerodial"
)

// dropSpans is a span processor that drops every span it is given.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }

// BenchmarkInterceptors times each interceptor around a call that does
// nothing, with the SDK sampling every span and dropping it at its end, and
// aggregating every measurement (a ManualReader, never read). The bench
// module times whole calls with and without them.
func BenchmarkInterceptors(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(dropSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	opts := []otelzerodial.Option{
		otelzerodial.WithTracerProvider(tp),
		otelzerodial.WithMeterProvider(mp),
		otelzerodial.WithPropagators(propagators),
	}
	nothing := func(context.Context, any, any) error { return nil }
	for _, bc := range []struct {
		name string
		ic   dispatch.Interceptor
	}{
		{"client", otelzerodial.ClientInterceptor(opts...)},
		{"server", otelzerodial.ServerInterceptor(opts...)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.ic(ctx, "Arith.Multiply", nil, nil, nothing); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
