package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callCtx is the cancellation core of a handler's context, shared by the
// network (serverCall) and the shortcut (shortcutCtx), so that on every path
// the handler's context ends for the same reasons with the same error, and
// carries the caller's metadata and no other value. It costs one allocation
// with the call it belongs to; its Done channel is made only if asked for.
// It takes the call's description, built once by the path the call came
// by: its metadata, deadline and CallInfo are the handler's.
type callCtx struct {
	callDesc
	// ext holds what only some calls use (CallInfo, reply metadata).
	ext atomic.Pointer[callExtra]

	mu     sync.Mutex
	done   chan struct{} // made by the first Done
	err    error
	afters *afterFunc // AfterFunc's, a list (next): a word, not a slice's three
	// hook, if set, is told once when the context ends (outside mu). An
	// interface, not a func, so that setting it allocates nothing.
	hook endHook
}

// endHook is told when a callCtx ends.
type endHook interface{ ended() }

type afterFunc struct {
	f       func()
	stopped bool
	next    *afterFunc
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// cancel ends the context with err, once.
func (c *callCtx) cancel(err error) {
	c.mu.Lock()
	afters, hook, ok := c.cancelLocked(err)
	c.mu.Unlock()
	if ok {
		c.after(afters, hook)
	}
}

// cancelLocked records err; the caller runs c.after with the results once
// it has released c.mu.
func (c *callCtx) cancelLocked(err error) (*afterFunc, endHook, bool) {
	if c.err != nil {
		return nil, nil, false
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	for a := afters; a != nil; a = a.next {
		a.stopped = true
	}
	return afters, c.hook, true
}

func (c *callCtx) after(afters *afterFunc, hook endHook) {
	if hook != nil {
		hook.ended()
	}
	for a := afters; a != nil; a = a.next {
		go a.f()
	}
}

// doneLocked returns the Done channel, making it if need be.
func (c *callCtx) doneLocked() <-chan struct{} {
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

// Done and Err are a network call's (serverCall's, codecCall's); the
// shortcut's context has its own, which look at the Client and the Server
// too.
func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doneLocked()
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value is the Value of a handler's context, on every path: the caller's
// metadata, which MetadataFrom copies so that it stays as the caller sent
// it; the call itself for SetReplyMetadata; the call's CallInfo (made from
// its description on first use) and its Server, for ShuttingDown; and
// nothing else.
func (c *callCtx) Value(key any) any {
	switch key.(type) {
	case incomingKey:
		if c.md != nil {
			return c.md
		}
	case replyHolderKey:
		return c
	case callInfoKey:
		return c.callInfo()
	case serverKey:
		return c.peer.srv
	}
	return nil
}

// Deadline is the caller's, as the call's description says: what the
// network's Timeout carried, the shortcut's or a foreign protocol's
// context's, none through a net/rpc codec.
func (c *callCtx) Deadline() (time.Time, bool) { return c.deadlineOf() }

// AfterFunc lets contexts derived from this one follow its cancellation
// without a goroutine each (the context package looks for this method).
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f, next: c.afters}
	c.afters = a
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.stopped {
			return false
		}
		a.stopped = true
		for p := &c.afters; *p != nil; p = &(*p).next {
			if *p == a {
				*p = a.next
				break
			}
		}
		return true
	}
}

// shortcutCtx is the handler's context on the shortcut. Its deadline is the
// caller's; it ends when the caller's context ends, when the call returns,
// or when the Client or the Server stops — as the network's does when the
// Cancel message arrives, the reply is sent, or the connection closes.
//
// It follows the caller's context, the Client and the Server only once
// its handler asks for Done, and what that takes is kept apart, in a
// shortcutWatch, its hook (callCtx.hook): so the context of a handler that
// never asks — BenchmarkCall's shortcut rows — is a size class of the
// allocator smaller (144 bytes, not 160) and costs no store for it
// (TestShortcutCtxSize).
type shortcutCtx struct {
	callCtx
	parent context.Context
	client *Client
}

// shortcutWatch is what a shortcutCtx follows once its handler asked for
// Done, and its hook: when the context ends it stops following them.
type shortcutWatch struct {
	c    *shortcutCtx
	stop func() bool // ends the watch on the caller's context; nil when that cannot end
}

// ended stops following what the context followed.
func (w *shortcutWatch) ended() {
	if w.stop != nil {
		w.stop()
	}
	w.c.client.unwatch(w.c)
	w.c.peer.srv.unwatch(w.c)
}

// check ends the context if something it follows has ended; c.mu is held.
func (c *shortcutCtx) checkLocked() (*afterFunc, endHook, bool) {
	if c.err != nil {
		return nil, nil, false
	}
	if err := c.parent.Err(); err != nil {
		return c.cancelLocked(err)
	}
	if c.client.closed.IsSet() || c.peer.srv.stopped.IsSet() {
		return c.cancelLocked(context.Canceled)
	}
	return nil, nil, false
}

func (c *shortcutCtx) Err() error {
	c.mu.Lock()
	afters, hook, ok := c.checkLocked()
	err := c.err
	c.mu.Unlock()
	if ok {
		c.after(afters, hook)
	}
	return err
}

// Done makes the channel and only then starts following the caller's
// context, the Client and the Server: a handler that never asks costs
// nothing for it.
func (c *shortcutCtx) Done() <-chan struct{} {
	c.mu.Lock()
	afters, hook, ok := c.checkLocked()
	first := c.done == nil && c.err == nil
	ch := c.doneLocked()
	if first {
		w := &shortcutWatch{c: c}
		if c.parent.Done() != nil {
			w.stop = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
		}
		c.hook = w
	}
	c.mu.Unlock()
	if ok {
		c.after(afters, hook)
	}
	if first {
		c.client.watch(c)
		c.peer.srv.watch(c)
		// Either may have stopped while we registered.
		if c.client.closed.IsSet() || c.peer.srv.stopped.IsSet() {
			c.cancel(context.Canceled)
		}
		// The context may have ended meanwhile, and ended's unwatch run
		// before these watches: undo them, or the sets keep it for good.
		c.mu.Lock()
		over := c.err != nil
		c.mu.Unlock()
		if over {
			c.client.unwatch(c)
			c.peer.srv.unwatch(c)
		}
	}
	return ch
}

// finish ends the context when the call returns.
func (c *shortcutCtx) finish() {
	c.mu.Lock()
	if c.done == nil && c.err == nil && c.afters == nil && c.hook == nil {
		// Nobody asked for Done or derived a context: nothing to tell.
		c.err = context.Canceled
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.cancel(context.Canceled)
}

func (c *shortcutCtx) String() string { return "dispatch.shortcutCtx" }

// watchers is the set of shortcut contexts a Client or Server ends when it
// stops.
type watchers struct {
	mu  sync.Mutex
	set map[*shortcutCtx]struct{}
}

func (w *watchers) add(c *shortcutCtx) {
	w.mu.Lock()
	if w.set == nil {
		w.set = make(map[*shortcutCtx]struct{})
	}
	w.set[c] = struct{}{}
	w.mu.Unlock()
}

func (w *watchers) remove(c *shortcutCtx) {
	w.mu.Lock()
	delete(w.set, c)
	w.mu.Unlock()
}

// cancelAll ends every context in the set.
func (w *watchers) cancelAll() {
	w.mu.Lock()
	cs := make([]*shortcutCtx, 0, len(w.set))
	for c := range w.set {
		cs = append(cs, c)
	}
	w.mu.Unlock()
	for _, c := range cs {
		c.cancel(context.Canceled)
	}
}
