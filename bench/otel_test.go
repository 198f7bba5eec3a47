package bench

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/otelzerodial"
)

// The instrumented rows: the same calls as zerodial-copy, zerodial-memory,
// zerodial-mux and grpc-tcp, with OpenTelemetry on both ends — zerodial's
// otelzerodial interceptors, gRPC's otelgrpc stats handlers (which follow
// the same RPC conventions, semconv v1.43.0) — so that the difference from
// the plain row is what instrumentation costs a call. Each end records a
// span and a duration measurement and the trace context travels with the
// call (W3C trace context and baggage). The providers are the real SDK's:
// a TracerProvider that samples every span and hands it, ended, to a span
// processor that drops it, so creating, filling and ending spans is timed
// and exporting them is not; a MeterProvider whose ManualReader is never
// read, so each measurement is aggregated and nothing exported. The rows
// run at 16B only: at larger sizes the cost of a call hides that of its
// instrumentation.

// otelRows are the instrumented rows, each set up with the telemetry given.
var otelRows = []struct {
	name  string
	setup func(tb testing.TB, tel *telemetry) func() callFunc
}{
	{"zerodial-copy-otel", func(tb testing.TB, tel *telemetry) func() callFunc {
		return zerodialShortcut(tb, dispatch.ShortcutCopy, registerReflect, tel.zerodial())
	}},
	{"zerodial-memory-otel", func(tb testing.TB, tel *telemetry) func() callFunc {
		return zerodialNetwork(tb, memory.New(), "", tel.zerodial())
	}},
	{"zerodial-mux-otel", func(tb testing.TB, tel *telemetry) func() callFunc {
		return zerodialMux(tb, tel.zerodial())
	}},
	{"grpc-tcp-otel", func(tb testing.TB, tel *telemetry) func() callFunc {
		server, dial := tel.grpc()
		return grpcTCP(tb, server, dial)
	}},
}

func init() {
	for _, r := range otelRows {
		register(r.name, func(tb testing.TB, _ size) func() callFunc {
			return r.setup(tb, newTelemetry(tb, dropSpans{}))
		}, size16)
	}
}

// telemetry is what an instrumented row gives both of its ends.
type telemetry struct {
	tp          *sdktrace.TracerProvider
	mp          *sdkmetric.MeterProvider
	reader      *sdkmetric.ManualReader
	propagators propagation.TextMapPropagator
}

// newTelemetry returns an SDK TracerProvider that samples every span and
// hands it to spans, and an SDK MeterProvider with a ManualReader; a
// cleanup shuts both down.
func newTelemetry(tb testing.TB, spans sdktrace.SpanProcessor) *telemetry {
	reader := sdkmetric.NewManualReader()
	tel := &telemetry{
		tp:          sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(spans)),
		mp:          sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		reader:      reader,
		propagators: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	tb.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

// zerodial returns otelzerodial's interceptors for a zerodial row's ends.
func (tel *telemetry) zerodial() ends {
	opts := []otelzerodial.Option{
		otelzerodial.WithTracerProvider(tel.tp),
		otelzerodial.WithMeterProvider(tel.mp),
		otelzerodial.WithPropagators(tel.propagators),
	}
	return ends{
		server: []dispatch.ServerOption{dispatch.WithInterceptors(otelzerodial.ServerInterceptor(opts...))},
		client: []dispatch.ClientOption{dispatch.WithInterceptors(otelzerodial.ClientInterceptor(opts...))},
	}
}

// grpc returns otelgrpc's stats handlers for a gRPC row's server and
// client.
func (tel *telemetry) grpc() ([]grpc.ServerOption, []grpc.DialOption) {
	opts := []otelgrpc.Option{
		otelgrpc.WithTracerProvider(tel.tp),
		otelgrpc.WithMeterProvider(tel.mp),
		otelgrpc.WithPropagators(tel.propagators),
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(opts...))},
		[]grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(opts...))}
}

// dropSpans is a span processor that drops every span: the benchmarks time
// making spans, not exporting them.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }

// TestOtelRows checks that the instrumented rows instrument: every call
// makes a Client span and its child Server span, sampled, and a duration
// measurement on each end — so that no row times less work than it says.
func TestOtelRows(t *testing.T) {
	for _, r := range otelRows {
		t.Run(r.name, func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			tel := newTelemetry(t, spans)
			call := r.setup(t, tel)()
			var reply Product
			if err := call(context.Background(), multiply, &Args{A: 6, B: 7}, &reply); err != nil || reply.P != 42 {
				t.Fatalf("Multiply(6, 7) = %d, %v", reply.P, err)
			}
			// gRPC's server may end its span after the client has its reply.
			ended := spans.Ended()
			for stop := time.Now().Add(10 * time.Second); len(ended) < 2 && time.Now().Before(stop); ended = spans.Ended() {
				time.Sleep(time.Millisecond)
			}
			if len(ended) != 2 {
				t.Fatalf("%d spans ended, want 2", len(ended))
			}
			server, client := ended[0], ended[1]
			if server.SpanKind() == trace.SpanKindClient {
				server, client = client, server
			}
			if server.SpanKind() != trace.SpanKindServer || client.SpanKind() != trace.SpanKindClient {
				t.Fatalf("spans %s, %s; want a server and a client span", server.SpanKind(), client.SpanKind())
			}
			if server.Parent().SpanID() != client.SpanContext().SpanID() || !server.SpanContext().IsSampled() {
				t.Error("the server span is not the sampled child of the client span")
			}
			var rm metricdata.ResourceMetrics
			if err := tel.reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			found := map[string]bool{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					found[m.Name] = true
				}
			}
			for _, name := range []string{"rpc.server.call.duration", "rpc.client.call.duration"} {
				if !found[name] {
					t.Errorf("no %s measured; metrics: %v", name, found)
				}
			}
		})
	}
}
