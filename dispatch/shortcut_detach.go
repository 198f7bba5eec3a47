package dispatch

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// detachedCall is a shortcut call whose handler runs on a Server worker
// while the caller waits, so that the caller can stop waiting when its
// context ends (Client.runHandler). Pooled: a call costs no channel.
type detachedCall struct {
	srv  *Server
	m    *method
	ctx  context.Context // the handler's
	sctx *shortcutCtx    // the handler's context, when it has its own
	a, r any
	e    *Error
	md   Metadata // the reply's metadata, once the handler has returned

	// state says who owns the call once the handler returns: the caller,
	// while it waits (detachedRunning, then detachedReturned), or the
	// worker, once the caller has gone (detachedAbandoned).
	state atomic.Int32
	done  chan struct{}
}

const (
	detachedRunning int32 = iota
	detachedReturned
	detachedAbandoned
)

var detachedCalls = sync.Pool{New: func() any { return &detachedCall{done: make(chan struct{}, 1)} }}

// run is the worker's part: the handler, then the answer to the caller,
// or, if the caller has gone, the clean-up.
func (d *detachedCall) run() {
	srv := d.srv
	returned := false
	// Deferred, so that a handler that ends its goroutine (runtime.Goexit,
	// as t.FailNow does) still answers its caller and leaves the gate.
	defer func() {
		if !returned {
			d.e = goexitError(d.m.name)
		}
		if d.sctx != nil {
			d.md = d.sctx.sealReply()
			d.sctx.finish()
		}
		// Answer before leaving the gate: a Shutdown that finds the gate
		// idle then stops the Server, and a caller that saw that first
		// would take a finished call for an abandoned one.
		if d.state.CompareAndSwap(detachedRunning, detachedReturned) {
			d.done <- struct{}{} // d is the caller's from here on
			srv.gate.leave()
			return
		}
		srv.gate.leave()
		d.release()
	}()
	d.e = srv.invoke(d.ctx, d.m, d.a, d.r)
	returned = true
}

// wait returns nil when d's handler has returned, or why the caller stops
// waiting first: ctx ended, or closed or stopped (the Client's and the
// Server's signals) closed.
//
// It yields once before it parks. Server.work has just made the worker
// runnable next on this P, so a handler that does not block has usually
// returned by the time the caller runs again, and the caller need not park
// and be woken — which, with another P idle, costs a futex wake on each
// side. This serves BenchmarkCallDeadline (bench: zerodial-*-deadline),
// where it halves the cost of the hand-off; TestDetachedWait tests both ways
// through.
func (d *detachedCall) wait(ctx context.Context, closed, stopped <-chan struct{}) error {
	runtime.Gosched()
	select {
	case <-d.done:
		return nil
	default:
	}
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return context.Canceled
	case <-stopped:
		return context.Canceled
	}
}

func (d *detachedCall) release() {
	*d = detachedCall{done: d.done}
	detachedCalls.Put(d)
}
