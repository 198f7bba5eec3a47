package otelzerodial

import (
	"github.com/zerodial/transport/dispatch"
	"go.opentelemetry.io/otel/propagation"
)

// MetadataCarrier is a propagation.TextMapCarrier over a call's metadata:
// inject into one and send it with dispatch.WithMetadata, extract from
// dispatch.MetadataFrom. The interceptors use it; it is exported for
// propagating by hand. Keys are used as given (W3C trace context's are
// lower case). Set needs a non-nil map.
type MetadataCarrier dispatch.Metadata

var _ propagation.TextMapCarrier = MetadataCarrier(nil)

// Get returns the value of key, or "" when there is none.
func (c MetadataCarrier) Get(key string) string { return c[key] }

// Set sets key to value.
func (c MetadataCarrier) Set(key, value string) { c[key] = value }

// Keys returns the keys of the metadata, in no particular order.
func (c MetadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
