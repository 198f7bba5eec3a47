package dispatch

import (
	"context"
	"testing"
	"time"
)

// TestDetachedWait: wait reports the handler's return whether it came
// before the caller's yield (the fast way) or after it (the caller parks),
// and each of the ends it watches otherwise.
func TestDetachedWait(t *testing.T) {
	never := make(chan struct{})
	closed := make(chan struct{})
	close(closed)
	newCall := func() *detachedCall { return &detachedCall{done: make(chan struct{}, 1)} }

	d := newCall()
	d.done <- struct{}{}
	if err := d.wait(context.Background(), never, never); err != nil {
		t.Errorf("handler already returned: got %v", err)
	}

	d = newCall()
	go func() {
		time.Sleep(20 * time.Millisecond)
		d.done <- struct{}{}
	}()
	if err := d.wait(context.Background(), never, never); err != nil {
		t.Errorf("handler returned while the caller waited: got %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := newCall().wait(ctx, never, never); err != context.DeadlineExceeded {
		t.Errorf("context ended: got %v", err)
	}
	if err := newCall().wait(context.Background(), closed, never); err != context.Canceled {
		t.Errorf("Client closed: got %v", err)
	}
	if err := newCall().wait(context.Background(), never, closed); err != context.Canceled {
		t.Errorf("Server stopped: got %v", err)
	}
}
