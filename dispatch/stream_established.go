package dispatch

import (
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport/internal/flow"
)

// Established waits until the handler is ready — it has called Ready,
// sent its first message, or returned — and returns nil, or returns why
// the stream ended before: what the server refused the stream with (no
// such method, a method that is not streaming, shutting down, too many
// calls), the handler's error if it failed before it was ready (the error
// Recv then yields too), ctx's end, Close, a failed connection. A handler
// that returned without error before it was ready makes it return nil, as
// one that was ready and has since ended does. OpenStream returns without
// waiting, so that the first message can go with the opening; a caller
// that must know the handler is in place before it goes on — a watch
// subscribed before what it watches changes — waits here, and the handler
// calls Ready once it is in place. A handler that does none of the three
// holds Established until ctx ends: one that waits for the caller's
// messages before it sends anything must call Ready for its callers to
// use Established.
//
// Established may be called from any goroutine, at any time, more than
// once. Against a server of an earlier release, which does not tell
// readiness, it returns once the server has taken the stream (its handler
// has been started).
func (s *Stream[In, Out]) Established() error {
	if err := established(s.end); err != nil {
		return s.end.named(err)
	}
	return nil
}

// established waits until the handler of the stream of end is ready, or
// returns why not. On the network the server tells it by the ready frame
// (WIRE.md, Streams); on the shortcut the handler's end sets it.
func established(end callerEnd) error {
	for {
		switch e := end.(type) {
		case *endHooked: // interceptors, replicas
			end = e.callerEnd
		case *clientStream:
			return e.established()
		case *memStream:
			return e.established()
		case failedEnd:
			return e.err
		default:
			return nil
		}
	}
}

// readiness is what Established waits for on a caller's end: notReady
// until the handler is ready, or until the stream ends first. It leaves
// notReady once, under its stream's mutex, and wait, made by a waiting
// Established, is closed then. Small, so that the ends keep the allocation
// size classes they had before readiness (a signal.Signal is 48 bytes).
type readiness struct {
	state atomic.Uint32
	wait  chan struct{}
}

// The states of a readiness.
const (
	notReady uint32 = iota
	isReady
	endedFirst // the stream ended before the handler was ready
)

// settle moves r from notReady to to; after the first, one atomic load.
// mu is the stream's.
func (r *readiness) settle(mu *sync.Mutex, to uint32) {
	if r.state.Load() != notReady {
		return
	}
	mu.Lock()
	ch := r.settleLocked(to)
	mu.Unlock()
	closeWait(ch)
}

// settleLocked moves r from notReady to to, if it is still notReady, and
// returns the channel of a waiting Established, to close (closeWait) once
// the stream's mutex is released.
func (r *readiness) settleLocked(to uint32) chan struct{} {
	if r.state.Load() != notReady {
		return nil
	}
	r.state.Store(to)
	ch := r.wait
	r.wait = nil
	return ch
}

// closeWait wakes a waiting Established, if any.
func closeWait(ch chan struct{}) {
	if ch != nil {
		close(ch)
	}
}

// await waits until r leaves notReady and returns its state, or until w
// says to stop, and returns why. mu is the stream's.
func (r *readiness) await(mu *sync.Mutex, w flow.Waiter) (uint32, error) {
	for {
		if state := r.state.Load(); state != notReady {
			return state, nil
		}
		if err := w.Check(); err != nil {
			return notReady, err
		}
		mu.Lock()
		if r.state.Load() != notReady {
			mu.Unlock()
			continue
		}
		if r.wait == nil {
			r.wait = make(chan struct{})
		}
		ch := r.wait
		mu.Unlock()
		if err := w.Wait(ch); err != nil {
			return notReady, err
		}
	}
}
