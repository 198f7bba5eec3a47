package memory_test

import (
	"testing"

	"github.com/zerodial/transport"
)

// TestWaitFrameKeepsOrder: the message WaitFrame saw is received before
// those queued after it, by whichever Recv comes next, and a round trip
// through WaitFrame allocates nothing.
func TestWaitFrameKeepsOrder(t *testing.T) {
	a, s := pair(t)
	b := s.(transport.FrameWaiter)
	for _, body := range []string{"1", "2", "3"} {
		if err := a.Send(&transport.Message{Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := b.WaitFrame(); err != nil { // the second takes nothing more
			t.Fatal(err)
		}
	}
	var m transport.Message
	for _, want := range []string{"1", "2", "3"} {
		if err := s.Recv(&m); err != nil {
			t.Fatal(err)
		}
		if string(m.Body) != want {
			t.Fatalf("Recv got %q, want %q", m.Body, want)
		}
	}
	if raceEnabled {
		return // sync.Pool drops items at random under the race detector
	}
	out := &transport.Message{Header: map[string]string{"Seq": "1"}, Body: make([]byte, 16)}
	allocs := testing.AllocsPerRun(200, func() {
		if err := a.Send(out); err != nil {
			t.Fatal(err)
		}
		if err := b.WaitFrame(); err != nil {
			t.Fatal(err)
		}
		if err := s.Recv(&m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Send, WaitFrame and Recv allocate %v times, want 0", allocs)
	}
}
