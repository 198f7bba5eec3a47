package otelzerodial_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/otelzerodial"
)

// Over HTTP (a path of pathCases, so every test of spans, metrics and
// streams runs on it) a base URL without a port gives server.port its
// scheme's, as an HTTP client's span would.
func TestHTTPServerPortOfScheme(t *testing.T) {
	for base, port := range map[string]int64{"http://127.0.0.1": 80, "https://127.0.0.1/prefix": 443} {
		tel := newTelemetry(t, sdktrace.AlwaysSample())
		c, err := httpzerodial.Dial(context.Background(), base,
			httpzerodial.WithDispatchOptions(dispatch.WithInterceptors(otelzerodial.ClientInterceptor(tel.options()...))))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the call need not go out: the span says where it would
		_ = c.Call(ctx, "Arith.Multiply", Args{}, new(int))
		c.Close()
		a := attrs(kind(t, tel.ended(t, 1), trace.SpanKindClient))
		if got := a["server.address"].AsString(); got != "127.0.0.1" {
			t.Errorf("%s: server.address %q", base, got)
		}
		if got := a["server.port"].AsInt64(); got != port {
			t.Errorf("%s: server.port %d, want %d", base, got, port)
		}
	}
}
