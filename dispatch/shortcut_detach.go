package dispatch

import (
	"context"
	"runtime"
)

// detachedCall is a shortcut call whose handler runs on a Server worker
// while the caller waits, so that the caller can stop waiting when its
// context ends (Client.runHandler). Pooled by its Server (Server.detached):
// a call costs no channel.
type detachedCall struct {
	srv  *Server
	m    *method
	ctx  context.Context // the handler's
	sctx *shortcutCtx    // the handler's context, when it has its own
	a, r any
	e    *Error
	md   Metadata // the reply's metadata, once the handler has returned

	// state says where the call is, and who owns it once the handler
	// returns: the caller, while it waits (detachedRunning, or
	// detachedWaiting once it has gone to sleep on done; then
	// detachedReturned), or the worker, once the caller has gone
	// (detachedAbandoned).
	state detachState
	// done wakes a caller that went to sleep (detachedWaiting) when the
	// handler returns; a caller that finds the call returned without
	// sleeping is sent nothing.
	done chan struct{}
}

// newDetached returns a detachedCall of srv's to fill in, reused if srv has
// one. The Server's own rather than the process's: a call's channel is
// then made inside the testing/synctest bubble the Server was made in, and
// never waited on in another.
func newDetached(srv *Server) *detachedCall {
	if d, _ := srv.detached.Get().(*detachedCall); d != nil {
		return d
	}
	return &detachedCall{done: make(chan struct{}, 1)}
}

// run is the worker's part: the handler, then the answer to the caller,
// or, if the caller has gone, the clean-up.
func (d *detachedCall) run() {
	srv := d.srv
	returned := false
	// Deferred, so that a handler that ends its goroutine (runtime.Goexit,
	// as t.FailNow does) still answers its caller, or leaves the gate.
	defer func() {
		if !returned {
			d.e = goexitError(d.m.name)
		}
		if d.sctx != nil {
			d.md = d.sctx.sealReply()
			d.sctx.finish()
		}
		// While the caller waits, its own place in the gate holds the
		// Server for the handler, and the caller leaves the gate after it
		// has taken the answer; a caller that left first made the handler
		// a place of its own (abandon), which it leaves now.
		if !d.answer() {
			srv.gate.leave()
			d.release()
		}
	}()
	d.e = srv.invoke(d.ctx, d.m, d.a, d.r)
	returned = true
}

// answer tells the caller that the handler has returned, and reports
// false if the caller has gone (d is then the worker's to release). Once
// it reports true, d is the caller's: the worker must not touch it again.
func (d *detachedCall) answer() bool {
	switch d.state.handlerReturns() {
	case detachedRunning:
		return true // the caller has not gone to sleep: it will look
	case detachedWaiting:
		d.done <- struct{}{}
		return true
	}
	return false // detachedAbandoned
}

// wait returns nil when d's handler has returned, or why the caller stops
// waiting first: ctx ended, or closed or stopped (the Client's and the
// Server's signals) closed. The caller then gives d up (abandon).
//
// It yields once before it goes to sleep. Server.work has just made the
// worker runnable next on this P, so a handler that does not block has
// usually returned by the time the caller runs again, and neither side
// needs a channel: the caller finds detachedReturned and the worker sent
// nothing. Only a caller that finds the handler still running goes to
// sleep on done, and says so first (detachedWaiting), for the worker to
// wake it. This serves BenchmarkCallDeadline (bench:
// zerodial-*-deadline), where it halves the cost of the hand-off;
// TestDetachedWait tests each way through.
func (d *detachedCall) wait(ctx context.Context, closed, stopped <-chan struct{}) error {
	runtime.Gosched()
	if !d.state.callerSleeps() {
		return nil // detachedReturned
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

// abandon gives d to the worker after wait reported an error, and reports
// true; or, if the handler returned meanwhile, takes the answer it sent
// and reports false: d is still the caller's.
//
// The handler, which may now outlive the call, is given a place in the
// Server's gate of its own, which the worker leaves when it returns: a
// Shutdown waits for it as for a call. It is taken before d is given up,
// while the caller's place still holds the gate open, so that the worker
// never leaves a place not yet taken. A call that is not abandoned, the
// usual case, costs the gate nothing more than the caller's place.
func (d *detachedCall) abandon() bool {
	g := d.srv.gate
	g.join()
	if d.state.callerLeaves() {
		return true // from here on the worker owns d and frees it
	}
	g.leave()
	<-d.done // detachedReturned: the worker saw detachedWaiting and sends
	return false
}

func (d *detachedCall) release() {
	srv := d.srv
	*d = detachedCall{done: d.done}
	srv.detached.Put(d)
}
