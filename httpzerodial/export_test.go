package httpzerodial

import "sync/atomic"

// WithInflatedCounter makes a Handler add to c the bytes that its gzip
// decompression yields: the inflate work that requests cost it.
func WithInflatedCounter(c *atomic.Int64) Option {
	return func(o *options) { o.inflated = c }
}
