package dispatch

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// Typed streams: descriptors of the three stream shapes, over HandleStream
// and OpenStream (stream.go), whose rules (flow control, the end, the
// context, Borrows' rendezvous) hold unchanged.

// Sender is what the handler of a server-streaming method sends its
// messages with: its stream (a *ServerStream), whose Send blocks while the
// caller's window is full, fails once the stream's context has ended, sends
// a zero message for a nil m, and lets m be reused when it returns; and
// whose Ready tells the caller that the handler is ready before it has
// anything to send (ServerStream.Ready), which Open waits for. An
// interface, so that a handler can be tested with a Sender of its own.
type Sender[T any] interface {
	Send(m *T) error
	Ready()
}

// Receiver is what the handler of a client-streaming method reads the
// caller's messages with: its stream (a *ServerStream), whose Recv yields
// them in order, ends once the caller has closed its side, yields a failure
// once as (nil, err), and reuses the *T yielded at the next iteration; and
// whose Ready tells the caller that the handler is ready
// (ServerStream.Ready), which Established waits for. An interface, so that
// a handler can be tested with a Receiver of its own.
type Receiver[T any] interface {
	Recv() iter.Seq2[*T, error]
	Ready()
}

// ServerStreamMethod describes a server-streaming method: one request of
// type A, then any number of messages of type Out from the handler.
//
//	var Watch = dispatch.NewServerStreamMethod[Query, Event]("Orders.Watch")
//
// Its handler receives the request as an argument (Handle), and its caller
// either ranges over the messages (Call) or opens the stream and learns
// that the handler is ready before reading (Open). It is registered and
// called as HandleStream and CallStream would: a caller by name
// (CallStream[A, Out]) reaches the same handler.
type ServerStreamMethod[A, Out any] struct{ name string }

// NewServerStreamMethod returns the descriptor of the server-streaming
// method name ("Service.Method"). A bad name panics, as NewMethod's does.
func NewServerStreamMethod[A, Out any](name string) *ServerStreamMethod[A, Out] {
	mustMethodName("dispatch.NewServerStreamMethod", name)
	return &ServerStreamMethod[A, Out]{name: name}
}

// Name returns the method's full name, "Service.Method".
func (m *ServerStreamMethod[A, Out]) Name() string { return m.name }

// String returns the method's full name, for logs.
func (m *ServerStreamMethod[A, Out]) String() string { return m.name }

// errNoRequest is what a server-streaming handler's caller gets when it
// closed the stream without sending the request (a caller by name that
// sent nothing).
func errNoRequest(name string) *Error {
	return &Error{Code: CodeInvalidArgument, Message: "dispatch: " + name + ": the stream carried no request; a server-streaming method takes one"}
}

// Handle registers fn as the method's handler on srv, as HandleStream does
// (same rules, same options). fn runs once the caller's request has
// arrived, with the request and a Sender of its messages; what it returns
// ends the stream. args is valid until fn returns. A caller that closes
// its side without a request gets CodeInvalidArgument, and fn does not
// run; messages after the first are not read. A watch subscribes, then
// calls out.Ready, so that a caller's Open returns with the subscription
// in place:
//
//	events, stop := bus.Subscribe(args.Topic)
//	defer stop()
//	out.Ready()
//	for e := range events { … out.Send(&e) … }
func (m *ServerStreamMethod[A, Out]) Handle(srv *Server, fn func(ctx context.Context, args *A, out Sender[Out]) error, opts ...RegisterOption) error {
	if fn == nil {
		return fmt.Errorf("dispatch: HandleStream %s: nil function", m.name)
	}
	name := m.name
	return HandleStream(srv, name, func(ctx context.Context, s *ServerStream[A, Out]) error {
		for args, err := range s.Recv() {
			if err != nil {
				return err
			}
			// Inside the range, so that args stays the caller's (or the
			// stream's buffer) until fn returns.
			return fn(ctx, args, s)
		}
		return errNoRequest(name)
	}, opts...)
}

// Call calls the method with args and yields the handler's messages, then
// the handler's error if it failed: CallStream, with its rules (breaking
// out of the range closes the stream; the *Out yielded is valid only until
// the next iteration; on the shortcut with a context that cannot end, the
// handler runs on the caller's goroutine).
func (m *ServerStreamMethod[A, Out]) Call(ctx context.Context, c *Client, args A) iter.Seq2[*Out, error] {
	return CallStream[A, Out](ctx, c, m.name, &args)
}

// Open opens the stream, sends args as its request and closes its side,
// and returns once the handler is ready: it has called its Sender's Ready,
// sent its first message, or returned, whichever came first — on every
// path. So whatever the handler set up before (a watch subscribed, say) is
// in place when Open returns, and a change made after Open returns reaches
// it. A handler that does none of the three — one that waits for its first
// message to send without calling Ready — holds Open until it does, or
// until ctx ends.
//
// What the server refuses the stream with (no such method, a method that
// is not streaming, shutting down, too many calls), what ends ctx, a failed
// connection, or the error of a handler that failed before it was ready,
// Open returns as its error, having closed the stream. A stream whose
// handler returned without error before it was ready is returned, and its
// Recv ends at once. The returned stream must be ranged to its end or
// closed. Against a server of an earlier release, which does not tell
// readiness, Open returns once the server has taken the stream.
func (m *ServerStreamMethod[A, Out]) Open(ctx context.Context, c *Client, args A) (*ServerStreamCall[Out], error) {
	s, err := OpenStream[A, Out](ctx, c, m.name)
	if err != nil {
		return nil, err
	}
	if err := s.Send(&args); err != nil && !finished(s.end, err) {
		s.Close()
		return nil, err
	}
	if err := s.CloseSend(); err != nil && !s.end.ended() {
		s.Close()
		return nil, err
	}
	if err := s.Established(); err != nil && !finished(s.end, err) {
		s.Close()
		return nil, err
	}
	return &ServerStreamCall[Out]{s: s}, nil
}

// finished reports whether err, from a caller's end, says only that the
// handler has ended without error: Recv has the rest.
func finished(end callerEnd, err error) bool {
	return errors.Is(err, ErrStreamDone) && end.ended()
}

// ServerStreamCall is a caller's end of a server-streaming method opened by
// ServerStreamMethod.Open: the handler's messages, and Close.
type ServerStreamCall[Out any] struct {
	s interface {
		Recv() iter.Seq2[*Out, error]
		Close() error
	}
}

// Recv yields the handler's messages, then its error if it failed, as
// Stream.Recv does (breaking out closes the stream; the *Out yielded is
// valid only until the next iteration).
func (s *ServerStreamCall[Out]) Recv() iter.Seq2[*Out, error] { return s.s.Recv() }

// Close ends the stream if it has not ended, as Stream.Close does.
func (s *ServerStreamCall[Out]) Close() error { return s.s.Close() }

// ClientStreamMethod describes a client-streaming method: any number of
// messages of type In from the caller, then one reply of type R.
//
//	var Sum = dispatch.NewClientStreamMethod[int, int]("Stats.Sum")
//
// It is registered as HandleStream[In, R] is: the reply is the stream's one
// message from the handler.
type ClientStreamMethod[In, R any] struct{ name string }

// NewClientStreamMethod returns the descriptor of the client-streaming
// method name ("Service.Method"). A bad name panics, as NewMethod's does.
func NewClientStreamMethod[In, R any](name string) *ClientStreamMethod[In, R] {
	mustMethodName("dispatch.NewClientStreamMethod", name)
	return &ClientStreamMethod[In, R]{name: name}
}

// Name returns the method's full name, "Service.Method".
func (m *ClientStreamMethod[In, R]) Name() string { return m.name }

// String returns the method's full name, for logs.
func (m *ClientStreamMethod[In, R]) String() string { return m.name }

// Handle registers fn as the method's handler on srv, as HandleStream does
// (same rules, same options). fn reads the caller's messages from in and
// fills reply; when it returns nil, the reply is sent and the stream ends,
// and when it fails, its error ends the stream instead (no reply is sent).
// The caller's Established returns once fn calls in.Ready, or returns.
func (m *ClientStreamMethod[In, R]) Handle(srv *Server, fn func(ctx context.Context, in Receiver[In], reply *R) error, opts ...RegisterOption) error {
	if fn == nil {
		return fmt.Errorf("dispatch: HandleStream %s: nil function", m.name)
	}
	return HandleStream(srv, m.name, func(ctx context.Context, s *ServerStream[In, R]) error {
		reply := new(R)
		if err := fn(ctx, s, reply); err != nil {
			return err
		}
		return s.Send(reply)
	}, opts...)
}

// Open opens the stream. It fails only for what this end knows (a closed
// Client, an ended ctx, a failed Dial), as OpenStream does, and returns
// without waiting for the server, so that the first message goes with the
// opening; what the server says, CloseAndRecv returns, and Established
// waits for the handler to be ready. The returned stream must be finished
// with CloseAndRecv or closed.
func (m *ClientStreamMethod[In, R]) Open(ctx context.Context, c *Client) (*ClientStreamCall[In, R], error) {
	s, err := OpenStream[In, R](ctx, c, m.name)
	if err != nil {
		return nil, err
	}
	return &ClientStreamCall[In, R]{s: s, name: m.name}, nil
}

// ClientStreamCall is a caller's end of a client-streaming method: the
// caller's messages (Send), then the reply (CloseAndRecv).
type ClientStreamCall[In, R any] struct {
	s    *Stream[In, R]
	name string
}

// Send sends m to the handler, as Stream.Send does. Once it fails, the
// stream has ended: CloseAndRecv returns why (the handler's error, when it
// failed).
func (s *ClientStreamCall[In, R]) Send(m *In) error { return s.s.Send(m) }

// Established waits until the handler is ready, as Stream.Established
// does: nil once the handler has called its Receiver's Ready (or has
// returned without error), or why not (the server's refusal, the
// handler's error, ctx's end, a failed connection). It may be called at
// any time, from any goroutine.
func (s *ClientStreamCall[In, R]) Established() error { return s.s.Established() }

// CloseAndRecv closes the caller's side and waits for the reply: the
// handler's reply, or the handler's error, or the stream's failure (ctx's
// error as an *Error, ErrShutdown). A stream that ends without a reply, or
// with more than one (a handler registered by name that sent them), fails
// with CodeInternal.
func (s *ClientStreamCall[In, R]) CloseAndRecv() (R, error) {
	var reply R
	if err := s.s.CloseSend(); err != nil && !s.s.end.ended() {
		s.s.Close()
		return reply, err
	}
	got := false
	for p, err := range s.s.Recv() {
		if err != nil {
			return *new(R), err
		}
		if got {
			return *new(R), &Error{Code: CodeInternal, Message: "dispatch: " + s.name + ": more than one reply to a client-streaming call"}
		}
		reply, got = *p, true
	}
	if !got {
		return reply, &Error{Code: CodeInternal, Message: "dispatch: " + s.name + ": the stream ended without a reply"}
	}
	return reply, nil
}

// Close ends the stream if it has not ended, as Stream.Close does.
func (s *ClientStreamCall[In, R]) Close() error { return s.s.Close() }

// BidiStreamMethod describes a bidirectional streaming method: messages of
// type In from the caller and of type Out from the handler, any number
// each way, both ends typed by the one declaration.
//
//	var Chat = dispatch.NewBidiStreamMethod[Line, Line]("Room.Chat")
type BidiStreamMethod[In, Out any] struct{ name string }

// NewBidiStreamMethod returns the descriptor of the bidirectional streaming
// method name ("Service.Method"). A bad name panics, as NewMethod's does.
func NewBidiStreamMethod[In, Out any](name string) *BidiStreamMethod[In, Out] {
	mustMethodName("dispatch.NewBidiStreamMethod", name)
	return &BidiStreamMethod[In, Out]{name: name}
}

// Name returns the method's full name, "Service.Method".
func (m *BidiStreamMethod[In, Out]) Name() string { return m.name }

// String returns the method's full name, for logs.
func (m *BidiStreamMethod[In, Out]) String() string { return m.name }

// Handle registers fn as the method's handler on srv: HandleStream(srv,
// m.Name(), fn, opts...).
func (m *BidiStreamMethod[In, Out]) Handle(srv *Server, fn func(ctx context.Context, s *ServerStream[In, Out]) error, opts ...RegisterOption) error {
	return HandleStream(srv, m.name, fn, opts...)
}

// Open opens the stream: OpenStream[In, Out](ctx, c, m.Name()). It does
// not wait for the server; the stream's Established waits until the
// handler is ready.
func (m *BidiStreamMethod[In, Out]) Open(ctx context.Context, c *Client) (*Stream[In, Out], error) {
	return OpenStream[In, Out](ctx, c, m.name)
}
