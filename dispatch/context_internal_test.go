package dispatch

import (
	"context"
	"sync"
	"testing"
	"unsafe"
)

// TestCallCtxAfterFuncs: the functions AfterFunc registers on a handler's
// context run once each when it ends, but for those stopped first, whatever
// their place in the list; a stop after the end reports false, and one
// registered after the end runs at once.
func TestCallCtxAfterFuncs(t *testing.T) {
	c := &callCtx{}
	var wg sync.WaitGroup
	ran := make(chan int, 4)
	stops := make([]func() bool, 4)
	for i := range stops {
		stops[i] = c.AfterFunc(func() { ran <- i; wg.Done() })
	}
	if !stops[1]() || !stops[3]() {
		t.Fatal("a stop before the end reported false")
	}
	if stops[1]() {
		t.Fatal("a second stop reported true")
	}
	wg.Add(2)
	c.cancel(context.Canceled)
	wg.Wait()
	close(ran)
	got := map[int]bool{}
	for i := range ran {
		got[i] = true
	}
	if len(got) != 2 || !got[0] || !got[2] {
		t.Errorf("ran %v, want 0 and 2", got)
	}
	if stops[0]() || stops[2]() {
		t.Error("a stop after the end reported true")
	}
	late := make(chan struct{})
	c.AfterFunc(func() { close(late) }) // after the end: at once
	<-late
}

// TestShortcutCtxSize: a shortcut handler's context, allocated for every
// call of a method that sees its context, stays in the allocator's
// 144-byte size class (BenchmarkCall's shortcut rows): what only a handler
// that asks for Done needs is in its shortcutWatch. A field added to the
// call's description, or to callCtx, that takes it past 144 bytes costs
// every such call the next class, 160, and should make room first.
func TestShortcutCtxSize(t *testing.T) {
	if size := unsafe.Sizeof(shortcutCtx{}); size > 144 {
		t.Errorf("shortcutCtx is %d bytes, past the 144-byte size class", size)
	}
}
