package otelzerodial

import (
	"context"

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

// incomingCarrier is a read-only propagation.TextMapCarrier over the
// metadata a handler's caller sent: Get reads a key with
// dispatch.MetadataValue, so extracting the trace context of every call
// copies no map (MetadataFrom would); only Keys, which the W3C propagators
// do not call, takes a copy. Set does nothing: Extract never sets.
type incomingCarrier struct{ ctx context.Context }

var _ propagation.TextMapCarrier = incomingCarrier{}

func (c incomingCarrier) Get(key string) string {
	v, _ := dispatch.MetadataValue(c.ctx, key)
	return v
}

func (incomingCarrier) Set(string, string) {}

func (c incomingCarrier) Keys() []string { return MetadataCarrier(dispatch.MetadataFrom(c.ctx)).Keys() }
