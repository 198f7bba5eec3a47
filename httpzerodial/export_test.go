package httpzerodial

import (
	"net/http"
	"sync/atomic"

	"github.com/zerodial/transport/dispatch"
)

// WithInflatedCounter makes a Handler add to c the bytes that its gzip
// decompression yields: the inflate work that requests cost it.
func WithInflatedCounter(c *atomic.Int64) Option {
	return func(o *options) { o.inflated = c }
}

// MetadataOf reads the reply metadata a response's headers or trailers
// carry, as the Handler reads a request's (metadataFrom), less the headers
// net/http's server adds (Date); nil when none.
func MetadataOf(h http.Header) dispatch.Metadata {
	md := metadataFrom(h)
	delete(md, "date")
	if len(md) == 0 {
		return nil
	}
	return md
}
