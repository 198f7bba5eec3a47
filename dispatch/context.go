package dispatch

import (
	"context"
)

// callContext is the handler's context on every path. Its deadline,
// cancellation and error come from parent — on the network a context the
// server derives from the request, on the shortcut the caller's own — but
// its values do not: a handler sees the caller's metadata and nothing else,
// wherever the caller is.
type callContext struct {
	context.Context
	md Metadata
}

func (c *callContext) Value(key any) any {
	if _, ok := key.(incomingKey); ok && c.md != nil {
		return c.md
	}
	return nil
}

// AfterFunc lets context.WithCancel and friends, given a callContext as a
// parent, follow its cancellation without a goroutine of their own (the
// context package looks for this method because Value hides the parent's
// internals).
func (c *callContext) AfterFunc(f func()) func() bool {
	return context.AfterFunc(c.Context, f)
}

func (c *callContext) String() string { return "dispatch.callContext" }
