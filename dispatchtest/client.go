package dispatchtest

import (
	"context"
	"fmt"
	"io"
	"iter"
	"reflect"

	"github.com/zerodial/transport/dispatch"
)

// ClientCaller is the Caller of a path reached by a *dispatch.Client: its
// Call, OpenStream and CallStream, with the metadata each Call and
// StreamCall asks for put in the context (dispatch.WithMetadata,
// dispatch.CaptureReplyMetadata). Its streams carry the message types of
// the suite's services.
func ClientCaller(c *dispatch.Client) Caller { return clientCaller{c} }

type clientCaller struct{ c *dispatch.Client }

func withMetadata(ctx context.Context, md dispatch.Metadata, reply *dispatch.Metadata) context.Context {
	if md != nil {
		ctx = dispatch.WithMetadata(ctx, md)
	}
	if reply != nil {
		ctx = dispatch.CaptureReplyMetadata(ctx, reply)
	}
	return ctx
}

func (cc clientCaller) Call(ctx context.Context, c Call) error {
	return cc.c.Call(withMetadata(ctx, c.Metadata, c.ReplyMetadata), c.Method, c.Args, c.Reply)
}

func (cc clientCaller) OpenStream(ctx context.Context, s StreamCall) (ClientStream, error) {
	k, err := kindOf(s)
	if err != nil {
		return nil, err
	}
	return k.open(withMetadata(ctx, s.Metadata, s.ReplyMetadata), cc.c, s.Method)
}

func (cc clientCaller) CallStream(ctx context.Context, s StreamCall, args any, each func(m any) bool) error {
	k, err := kindOf(s)
	if err != nil {
		return err
	}
	return k.call(withMetadata(ctx, s.Metadata, s.ReplyMetadata), cc.c, s.Method, args, each)
}

// streamKind is dispatch's generic stream API for one pair of message
// types, behind functions that take and give them as any.
type streamKind struct {
	open func(ctx context.Context, c *dispatch.Client, name string) (ClientStream, error)
	call func(ctx context.Context, c *dispatch.Client, name string, args any, each func(any) bool) error
}

var streamKinds = map[[2]reflect.Type]streamKind{}

// kinds registers the pair In, Out.
func kinds[In, Out any]() {
	streamKinds[[2]reflect.Type{reflect.TypeFor[In](), reflect.TypeFor[Out]()}] = streamKind{
		open: func(ctx context.Context, c *dispatch.Client, name string) (ClientStream, error) {
			s, err := dispatch.OpenStream[In, Out](ctx, c, name)
			if err != nil {
				return nil, err
			}
			next, stop := iter.Pull2(s.Recv())
			return &clientStream[In, Out]{s: s, next: next, stop: stop}, nil
		},
		call: func(ctx context.Context, c *dispatch.Client, name string, args any, each func(any) bool) error {
			for m, err := range dispatch.CallStream[In, Out](ctx, c, name, args.(*In)) {
				if err != nil {
					return err
				}
				if !each(m) {
					return nil
				}
			}
			return nil
		},
	}
}

func init() {
	kinds[Num, Num]()
	kinds[Num, string]()
	kinds[[]byte, []byte]()
	kinds[[]byte, int]()
	kinds[int, []byte]()
	kinds[int, int]()
}

func kindOf(s StreamCall) (streamKind, error) {
	k, ok := streamKinds[[2]reflect.Type{s.In, s.Out}]
	if !ok {
		return streamKind{}, fmt.Errorf("dispatchtest: ClientCaller has no stream of %v to %v", s.In, s.Out)
	}
	return k, nil
}

// clientStream is a dispatch.Stream whose Recv is pulled a message at a
// time.
type clientStream[In, Out any] struct {
	s    *dispatch.Stream[In, Out]
	next func() (*Out, error, bool)
	stop func()
	// closed: Close has stopped the pull; Recv then ranges anew, and the
	// ended stream says how it ended.
	closed bool
}

func (c *clientStream[In, Out]) Send(m any) error { return c.s.Send(m.(*In)) }
func (c *clientStream[In, Out]) CloseSend() error { return c.s.CloseSend() }

func (c *clientStream[In, Out]) Recv(m any) error {
	if c.closed {
		for _, err := range c.s.Recv() {
			return err
		}
		return io.EOF
	}
	v, err, ok := c.next()
	switch {
	case !ok:
		return io.EOF
	case err != nil:
		return err
	}
	*m.(*Out) = *v
	return nil
}

func (c *clientStream[In, Out]) Close() error {
	err := c.s.Close()
	// Stopping the pull is breaking out of the range, which closes the
	// stream too: nothing is left running.
	c.stop()
	c.closed = true
	return err
}
