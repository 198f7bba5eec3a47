package dispatch

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/zerodial/transport/internal/flow"
)

// StreamInterceptor wraps the life of a stream, on either end
// (WithStreamInterceptors). A stream does not fit in one function call on
// the caller's side — OpenStream returns at once, and the stream ends at
// its last message or at Close — so an interceptor is told when the stream
// begins and returns what it wants told when it ends:
//
//   - It is called as the stream opens, with the context the stream runs
//     with (the caller's, or the handler's) and the method, and returns the
//     context to use instead: with values, metadata (WithMetadata, on the
//     caller's side, which the handler receives) or a deadline added.
//   - end, which must not be nil, is called once when the stream ends, with
//     its outcome: nil for a stream that ended well, or the error its caller
//     receives (or, on a Server, the handler's).
//   - StreamMessagesFrom(ctx), on the context it is given, counts the
//     stream's messages each way, for the interceptor to read when end is
//     called.
//   - On a Server, a non-nil error refuses the stream: the handler does not
//     run, the caller receives the error as the stream's, and the
//     interceptors begun before it are ended with it. On a Client, it fails
//     OpenStream (CallStream yields it).
//
// Interceptors run in the order given, the first outermost: the first is
// told first that a stream begins and last that it ends. CallInfoFrom
// works in them on both ends; on a Client, Path is the way the Client
// means to take.
//
// A stream's context carries no CallInfo for the handler's own use beyond
// what the Server's gives; the caller's context is the one the stream runs
// with.
type StreamInterceptor func(ctx context.Context, method string) (_ context.Context, end func(err error), _ error)

// streamInterceptorsOption is WithStreamInterceptors': one option for both
// ends.
type streamInterceptorsOption []StreamInterceptor

func (o streamInterceptorsOption) applyServer(s *serverOptions) {
	s.streamInterceptors = appendInterceptors(s.streamInterceptors, o, &s.problems, "WithStreamInterceptors")
}

func (o streamInterceptorsOption) applyClient(c *clientOptions) {
	c.streamInterceptors = appendInterceptors(c.streamInterceptors, o, &c.problems, "WithStreamInterceptors")
}

// WithStreamInterceptors appends stream interceptors to a chain: on a
// Server they wrap every stream it serves, on a Client every stream it
// opens, on every path. Unary calls are wrapped by WithInterceptors
// instead. A CallStream on the shortcut whose context cannot end, which
// otherwise runs its handler on the caller's goroutine, takes the ordinary
// way when either end has stream interceptors.
func WithStreamInterceptors(ics ...StreamInterceptor) Option {
	return streamInterceptorsOption(ics)
}

// beginStream tells ics, in order, that a stream of method begins with
// ctx. It returns the context the stream runs with and the function that
// tells them, in reverse order, how it ended; on a refusal, those begun
// are told the error, which is returned.
func beginStream(ctx context.Context, ics []StreamInterceptor, method string) (context.Context, func(error), error) {
	ends := make([]func(error), 0, len(ics))
	finish := func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
	for i, ic := range ics {
		next, end, err := ic(ctx, method)
		if err == nil && (next == nil || end == nil) {
			err = fmt.Errorf("dispatch: stream interceptor %d of %s returned a nil context or end function", i, method)
		}
		if err != nil {
			finish(err)
			return nil, nil, err
		}
		ctx = next
		ends = append(ends, end)
	}
	var once sync.Once
	return ctx, func(err error) { once.Do(func() { finish(err) }) }, nil
}

// endHooked is a caller's end whose interceptors are told how the stream
// ended: its last message (the handler's end, or why it failed), or its
// Close before that; its messages are counted for them. A replica's stream
// is hooked too, to count it out of its replica's calls in flight, and
// counts nothing (count is nil).
type endHooked struct {
	callerEnd
	end   func(error)
	count *StreamMessages
}

func (h *endHooked) send(m any) error {
	err := h.callerEnd.send(m)
	if err == nil && h.count != nil {
		h.count.sent.Add(1)
	}
	return err
}

func (h *endHooked) next() (flow.Item, error) {
	it, err := h.callerEnd.next()
	if err == nil && h.count != nil {
		h.count.received.Add(1)
	}
	if err != nil {
		if err == io.EOF {
			h.end(nil)
		} else {
			h.end(h.named(err)) // the error the caller receives
		}
	}
	return it, err
}

func (h *endHooked) close() {
	ended := h.callerEnd.ended()
	h.callerEnd.close()
	if !ended {
		h.end(ctxError(canceledCtx)) // the caller gave up: cancelled, as the handler sees it
	}
}

// canceledCtx is a context already cancelled, for the error a stream the
// caller closed ends with.
var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
