package dispatch

import (
	"context"
	"maps"
)

// Metadata is a set of string key/value pairs sent with a call. It is the
// only part of the caller's context that the handler sees, and it arrives
// the same on every path.
type Metadata map[string]string

type outgoingKey struct{}
type incomingKey struct{}

// WithMetadata returns a context whose calls carry md, merged over any
// metadata ctx already carries (md wins). md is copied.
func WithMetadata(ctx context.Context, md Metadata) context.Context {
	merged := make(Metadata, len(md))
	if old, ok := ctx.Value(outgoingKey{}).(Metadata); ok {
		maps.Copy(merged, old)
	}
	maps.Copy(merged, md)
	return context.WithValue(ctx, outgoingKey{}, merged)
}

// outgoing returns the metadata calls made with ctx carry.
func outgoing(ctx context.Context) Metadata {
	md, _ := ctx.Value(outgoingKey{}).(Metadata)
	return md
}

// MetadataFrom returns the metadata the caller sent, in a handler or an
// interceptor. The map is the handler's own: changing it affects nothing
// else. It is nil when the caller sent none.
func MetadataFrom(ctx context.Context) Metadata {
	md, _ := ctx.Value(incomingKey{}).(Metadata)
	return md
}
