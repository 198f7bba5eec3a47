package dispatch

import (
	"context"
	"sync/atomic"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
)

// StreamMessages counts the messages one end of a stream has sent and
// received. A stream interceptor (WithStreamInterceptors) finds it in the
// context it is given as the stream begins (StreamMessagesFrom), and reads
// it when it is told that the stream ended: what a gRPC stream interceptor
// learns by wrapping SendMsg and RecvMsg, with no wrapper to write. It is
// safe for concurrent use; its figures only grow.
type StreamMessages struct {
	sent, received atomic.Int64
}

// Sent is how many messages this end has sent: those its Send accepted.
func (m *StreamMessages) Sent() int64 { return m.sent.Load() }

// Received is how many messages this end has received: those Recv
// yielded (a message that arrived but was never asked for is not counted).
func (m *StreamMessages) Received() int64 { return m.received.Load() }

type streamMessagesKey struct{}

// StreamMessagesFrom returns the message counts of the stream whose context
// ctx is or derives from, on either end: in a stream interceptor as the
// stream begins, in the handler, and in the caller's stream interceptors.
// It is nil for a context of no stream, and for a stream on an end that has
// no stream interceptors, which pays nothing for counting.
func StreamMessagesFrom(ctx context.Context) *StreamMessages {
	m, _ := ctx.Value(streamMessagesKey{}).(*StreamMessages)
	return m
}

// withStreamMessages returns ctx carrying new counts, for the interceptors
// of a stream about to begin.
func withStreamMessages(ctx context.Context) (context.Context, *StreamMessages) {
	m := new(StreamMessages)
	return context.WithValue(ctx, streamMessagesKey{}, m), m
}

// countedHandlerEnd is a handler's end whose messages are counted, on a
// Server with stream interceptors.
type countedHandlerEnd struct {
	end   handlerEnd
	count *StreamMessages
}

func (c *countedHandlerEnd) send(m any) error {
	err := c.end.send(m)
	if err == nil {
		c.count.sent.Add(1)
	}
	return err
}

func (c *countedHandlerEnd) next() (flow.Item, error) {
	it, err := c.end.next()
	if err == nil {
		c.count.received.Add(1)
	}
	return it, err
}

func (c *countedHandlerEnd) done()              { c.end.done() }
func (c *countedHandlerEnd) ready()             { c.end.ready() }
func (c *countedHandlerEnd) codec() codec.Codec { return c.end.codec() }
