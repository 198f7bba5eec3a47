package dispatch

import (
	"github.com/zerodial/transport/internal/flow"
	"github.com/zerodial/transport/internal/signal"
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
func (s *Stream[In, Out]) Established() error { return established(s.end) }

// established waits until the handler of the stream of end is ready, or
// returns why not. On the network the server tells it by the ready frame
// (WIRE.md, Streams); on the shortcut the handler's end sets it.
func established(end callerEnd) error {
	for {
		switch e := end.(type) {
		case *endHooked: // interceptors, replicas
			end = e.callerEnd
		case *clientStream:
			return waitReady(&e.readied, e)
		case *memStream:
			return waitReady(&e.readied, e)
		case failedEnd:
			return e.err
		default:
			return nil
		}
	}
}

// waitReady waits until readied is set, and returns its error, or until w
// says to stop, and returns why.
func waitReady(readied *signal.Signal, w flow.Waiter) error {
	for !readied.IsSet() {
		if err := w.Check(); err != nil {
			return err
		}
		if err := w.Wait(readied.Signal()); err != nil {
			return err
		}
	}
	return readied.Err()
}
