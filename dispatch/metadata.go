package dispatch

import (
	"context"
	"errors"
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
// interceptor. Each call returns a new copy, the caller's own: changing it
// affects nothing else — not the caller's metadata, not what a Server
// interceptor around the handler, or a later MetadataFrom, sees (as gRPC's
// metadata.FromIncomingContext does). So read it once and keep the map;
// a copy costs one map, for a call that carries metadata (MetadataValue
// reads one key without it). It is nil when the caller sent none.
func MetadataFrom(ctx context.Context) Metadata {
	md, _ := ctx.Value(incomingKey{}).(Metadata)
	return maps.Clone(md)
}

// MetadataValue returns the value of key in the metadata the caller sent,
// in a handler or an interceptor, and whether the caller sent key: a read
// that copies nothing, for an interceptor that looks at a few keys of
// every call (as gRPC's metadata.ValueFromIncomingContext does).
func MetadataValue(ctx context.Context, key string) (string, bool) {
	md, _ := ctx.Value(incomingKey{}).(Metadata)
	v, ok := md[key]
	return v, ok
}

// errNoCall is SetReplyMetadata's error for a context that is not a
// handler's.
var errNoCall = errors.New("dispatch: SetReplyMetadata: the context is not a call's handler context")

// errReplySent is SetReplyMetadata's error once the call has ended.
var errReplySent = errors.New("dispatch: SetReplyMetadata: the call has ended; its reply is gone")

type replyHolderKey struct{}

// SetReplyMetadata attaches md to the reply of the call whose handler (or
// Server interceptor) has ctx, merged over what was set before (md wins).
// The caller receives it with CaptureReplyMetadata — with an error reply
// too — on every path, under the same rules as request metadata: it is
// copied, and on the network and in copy mode it counts towards the
// reply's frame limit. It fails when ctx is not a handler's context, or
// once the call has ended.
func SetReplyMetadata(ctx context.Context, md Metadata) error {
	c, ok := ctx.Value(replyHolderKey{}).(*callCtx)
	if !ok || c == nil {
		return errNoCall
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.extra()
	if e.sealed {
		return errReplySent
	}
	if e.replyMD == nil {
		e.replyMD = make(Metadata, len(md))
	}
	maps.Copy(e.replyMD, md)
	return nil
}

// replySoFar returns a copy of the reply metadata set so far, nil when
// none, leaving it open to more.
func (c *callCtx) replySoFar() Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.ext.Load()
	if e == nil || len(e.replyMD) == 0 {
		return nil
	}
	return maps.Clone(e.replyMD)
}

// sealReply returns the reply metadata set so far, and refuses any set
// later: the reply is being sent. A call that set none costs no
// allocation.
func (c *callCtx) sealReply() Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ext.CompareAndSwap(nil, sealedEmpty) {
		return nil
	}
	e := c.ext.Load()
	e.sealed = true
	return e.replyMD
}

type captureKey struct{}

// capture is one CaptureReplyMetadata, and those of the contexts it was
// made from, which receive the reply's metadata too.
type capture struct {
	to     *Metadata
	parent *capture
}

// CaptureReplyMetadata returns a context whose calls store their reply's
// metadata (SetReplyMetadata) in *md when they return: a new map, or nil
// when the reply carried none. A call that returns before its reply
// arrives (its context ended, the connection failed) leaves *md as it was.
// Captures nest: every capture of the contexts ctx was made from receives
// the metadata as well, so a Client interceptor may capture it without
// taking it from the caller. md must not be nil.
func CaptureReplyMetadata(ctx context.Context, md *Metadata) context.Context {
	if md == nil {
		panic("dispatch: CaptureReplyMetadata with a nil *Metadata")
	}
	parent, _ := ctx.Value(captureKey{}).(*capture)
	return context.WithValue(ctx, captureKey{}, &capture{to: md, parent: parent})
}

// capturesOf returns the captures of ctx, nil when it has none.
func capturesOf(ctx context.Context) *capture {
	c, _ := ctx.Value(captureKey{}).(*capture)
	return c
}

// deliver stores md, copied for each, in every capture of c.
func (c *capture) deliver(md Metadata) {
	for ; c != nil; c = c.parent {
		if md == nil {
			*c.to = nil
		} else {
			*c.to = maps.Clone(md)
		}
	}
}
