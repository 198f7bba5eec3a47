package dispatch

import (
	"context"
	"runtime"
	"testing"
)

// TestDetachedWait: wait reports the handler's return whether it came
// before the caller looked (the fast way: nothing is sent) or while the
// caller slept (the worker wakes it), and each of the ends it watches
// otherwise; after one of those, abandon gives the call to the worker,
// with a place in the Server's gate for the handler, unless the handler
// answered meanwhile (no place is kept then).
func TestDetachedWait(t *testing.T) {
	never := make(chan struct{})
	closed := make(chan struct{})
	close(closed)
	newCall := func() *detachedCall {
		return &detachedCall{srv: &Server{gate: newGate()}, done: make(chan struct{}, 1)}
	}
	// answerOnceAsleep answers d once its caller has gone to sleep.
	answerOnceAsleep := func(d *detachedCall) chan bool {
		answered := make(chan bool, 1)
		go func() {
			for d.state.phase() != detachedWaiting {
				runtime.Gosched()
			}
			answered <- d.answer()
		}()
		return answered
	}

	d := newCall()
	if !d.answer() {
		t.Fatal("answer with the caller still there: got false")
	}
	if err := d.wait(context.Background(), never, never); err != nil {
		t.Errorf("handler already returned: got %v", err)
	}
	if len(d.done) != 0 {
		t.Error("a caller that did not sleep was sent a wake-up")
	}

	d = newCall()
	answered := answerOnceAsleep(d)
	if err := d.wait(context.Background(), never, never); err != nil {
		t.Errorf("handler returned while the caller slept: got %v", err)
	}
	if !<-answered {
		t.Error("answer to a sleeping caller: got false")
	}
	if len(d.done) != 0 {
		t.Error("the wake-up was left in done")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, c := range map[string]struct {
		ctx             context.Context
		closed, stopped <-chan struct{}
		want            error
	}{
		"context ended":  {ctx, never, never, context.Canceled},
		"Client closed":  {context.Background(), closed, never, context.Canceled},
		"Server stopped": {context.Background(), never, closed, context.Canceled},
	} {
		d := newCall()
		if err := d.wait(c.ctx, c.closed, c.stopped); err != c.want {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
		if !d.abandon() {
			t.Errorf("%s: abandon with the handler running: got false", name)
		}
		if n := d.srv.gate.n.Load(); n != 1 {
			t.Errorf("%s: the abandoned handler holds %d places in the gate, want 1", name, n)
		}
		if d.answer() {
			t.Errorf("%s: answer once the caller has gone: got true", name)
		}
	}

	// The caller stops waiting and the handler answers before it gives
	// the call up: the caller takes the answer.
	d = newCall()
	d.state.callerSleeps()
	if !d.answer() {
		t.Fatal("answer to a sleeping caller: got false")
	}
	if d.abandon() {
		t.Error("abandon after the answer: got true")
	}
	if n := d.srv.gate.n.Load(); n != 0 {
		t.Errorf("a handler that answered holds %d places in the gate, want 0", n)
	}
	if len(d.done) != 0 {
		t.Error("abandon left the wake-up in done")
	}
}
