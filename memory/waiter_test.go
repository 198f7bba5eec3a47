package memory

import "testing"

// TestFrameSlot: the slot gives back what it was filled with, once.
func TestFrameSlot(t *testing.T) {
	var f frameSlot
	if f.full() || f.take() != nil {
		t.Fatal("a new slot is not empty")
	}
	c := new(message)
	f.fill(c)
	if !f.full() {
		t.Fatal("a filled slot says it is empty")
	}
	if got := f.take(); got != c {
		t.Fatalf("take = %p, want %p", got, c)
	}
	if f.full() || f.take() != nil {
		t.Fatal("the slot still holds its message after take")
	}
}
