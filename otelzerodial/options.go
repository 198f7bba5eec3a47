package otelzerodial

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Option configures ServerInterceptor and ClientInterceptor.
type Option interface{ apply(*config) }

type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	propagators    propagation.TextMapPropagator
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider makes spans with tp instead of the global
// TracerProvider. A nil tp keeps the global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tracerProvider = tp
		}
	})
}

// WithMeterProvider records metrics with mp instead of the global
// MeterProvider. A nil mp keeps the global one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp != nil {
			c.meterProvider = mp
		}
	})
}

// WithPropagators injects (Client) and extracts (Server) the trace context
// and baggage with p instead of the global TextMapPropagator. A nil p keeps
// the global one. Give both ends the same propagators.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) {
		if p != nil {
			c.propagators = p
		}
	})
}

func newConfig(opts []Option) config {
	c := config{
		tracerProvider: otel.GetTracerProvider(),
		meterProvider:  otel.GetMeterProvider(),
		propagators:    otel.GetTextMapPropagator(),
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}
