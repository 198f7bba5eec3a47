// Package spare keeps one value aside for its owner's next use, in front of
// a sync.Pool.
//
// A value that one end of a connection frees and the same connection uses
// again for its next message (a message copy, a pending call) need not go
// through the pool: an atomic swap costs a fraction of a Pool's Get or Put,
// each of which pins the goroutine to its P. Over the memory transport a
// call makes sixteen Pool operations, about a twentieth of its
// instructions; Slot serves BenchmarkUnary/zerodial-memory.
package spare

import "sync/atomic"

// Slot holds at most one *T. The zero Slot is empty and ready to use; it is
// safe for concurrent use.
type Slot[T any] struct{ p atomic.Pointer[T] }

// Get takes the value held, or returns nil when there is none.
func (s *Slot[T]) Get() *T {
	if s.p.Load() == nil {
		return nil // no write to a shared word when empty
	}
	return s.p.Swap(nil)
}

// Put keeps x unless the slot holds a value already, and reports whether it
// kept it; the caller puts one it did not keep back in its pool.
func (s *Slot[T]) Put(x *T) bool {
	return s.p.Load() == nil && s.p.CompareAndSwap(nil, x)
}
