package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"strings"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
	"github.com/zerodial/transport/internal/signal"
)

// Streams. A streaming method, registered with HandleStream, exchanges any
// number of messages each way with its caller (OpenStream, or CallStream
// for the common server-streaming shape) over the same paths as unary
// calls, with the same router, error mapping, panic rule, deadline rule and
// metadata. Each direction has flow control in bytes (WithStreamWindow):
// a sender whose peer has not consumed what it sent waits, so a slow
// consumer holds a bounded amount of memory, and one stalled stream never
// holds up the other calls and streams of its connection.

// ErrStreamDone is returned by a Send on a stream that can carry no more
// messages that way, when there is no error more telling: the caller's
// Send after CloseSend or Close, or after the handler returned without
// error (the handler's error, when it failed, is returned instead, and
// yielded by Recv). A handler's Send that fails because its caller closed
// the stream (or broke out of its range) returns the stream context's
// error instead, on every path: in direct mode too, where the caller may
// drop unread the message it was lent.
var ErrStreamDone = errors.New("dispatch: the stream has ended")

// callerEnd is the caller's half of a stream, on whichever path it took.
// Send and CloseSend come from one goroutine at a time, and so do next and
// done; close may come from any.
type callerEnd interface {
	send(m any) error // m is a non-nil *In
	closeSend() error
	// next returns the next message from the handler, io.EOF after the
	// last when the handler succeeded, or why the stream ended.
	next() (flow.Item, error)
	done()       // the caller has finished with the message next returned
	close()      // Close: cancel the stream unless it has ended; receive no more
	ended() bool // the handler's end has arrived
	codec() codec.Codec
	// named returns err, which ended the stream or one of its caller's
	// operations, as the caller receives it: a failure of the Client's
	// own, and the end of the caller's context, name the method and the
	// path the stream took, as a call's do (callError).
	named(err error) error
}

// callerWait is the stream wait of a caller's end, on the network and on
// the shortcut alike: its Check and Wait make the end a flow.Waiter, which
// stops waiting when the caller closes the stream (closed), when its
// context ends, and on the shortcut when the Client or the Server stops,
// as a connection would fail. The last two give the stream up (stream's
// giveUp). On the network c and srv are nil: the connection's failure
// reaches the stream through its inbox and its credit.
type callerWait struct {
	ctx    context.Context // the caller's
	closed signal.Signal   // set by the caller's Close
	c      *Client         // the shortcut's; nil on the network
	srv    *Server         // the shortcut's; nil on the network
	stream interface{ giveUp() }
}

func (w *callerWait) Check() error {
	if w.closed.IsSet() {
		return ErrStreamDone
	}
	if w.ctx.Err() != nil {
		w.stream.giveUp()
		return ctxError(w.ctx)
	}
	if w.c != nil && (w.c.closed.IsSet() || w.srv.stopped.IsSet()) {
		w.stream.giveUp()
		return w.c.stoppedError()
	}
	return nil
}

func (w *callerWait) Wait(ch <-chan struct{}) error {
	var cClosed, srvStopped <-chan struct{} // nil on the network: never ready
	if w.c != nil {
		cClosed, srvStopped = w.c.closed.Signal(), w.srv.stopped.Signal()
	}
	select {
	case <-ch:
		return nil
	case <-w.closed.Signal():
		return ErrStreamDone
	case <-w.ctx.Done():
		w.stream.giveUp()
		return ctxError(w.ctx)
	case <-cClosed:
	case <-srvStopped:
	}
	w.stream.giveUp()
	return w.c.stoppedError()
}

// handlerEnd is the handler's half of a stream.
type handlerEnd interface {
	send(m any) error // m is a non-nil *Out; the first is the handler's readiness too
	next() (flow.Item, error)
	done() // the handler has finished with the message next returned
	// ready tells the caller that the handler is ready (Ready): once,
	// before any message, and never after the handler has returned. From
	// any goroutine.
	ready()
	codec() codec.Codec
}

// streamMethod is what a method registered by HandleStream adds to method.
type streamMethod struct {
	in, out reflect.Type // In and Out, for the shortcut's direct mode
	run     func(ctx context.Context, end handlerEnd) error
}

// HandleStream registers fn as the streaming method name ("Service.Method")
// of srv, beside unary methods under the same names' rules: a name taken
// by any method is an error. Like Register, it may be called while srv
// serves, until Shutdown or Close (see the package doc, Registration). fn
// runs once per stream, with a context that
// carries the caller's deadline and metadata (MetadataFrom), its CallInfo
// (CallInfoFrom) and reply metadata (SetReplyMetadata, sent with the end
// of the stream); the context ends when the caller's context ends, when the
// caller closes the stream, or when the connection does. It does not end
// when the Server's Shutdown begins — Shutdown waits for the stream — but
// ShuttingDown(ctx) is closed then: a stream that would run until its
// caller leaves should return then. What fn returns
// ends the stream: the caller's Recv yields its error, if any, after the
// messages sent before it, mapped as a unary call's error is (an *Error
// with its code; a panic is CodeInternal).
//
// Borrows may be given: for a ShortcutDirect caller, fn's messages then
// pass by pointer, with no codec. A message fn Sends is handed to the
// caller as is, and Send returns only once the caller has finished with it
// (has asked for the next, or stopped) — a rendezvous — so fn may reuse it
// after Send returns, and must put nothing in it that it changes later.
// Nothing of this is encoded, so the frame limit applies neither to such a
// message nor to the reply metadata of the stream's end, as it does not to
// a direct call's reply.
// The rendezvous holds even when the stream's context has ended: a Send
// whose message the caller has taken waits for the caller to let go of it,
// which it does when its loop body returns. The caller's messages still go
// through the codec, as in ShortcutCopy: a rendezvous both ways would
// deadlock any caller or handler that Sends from inside its Recv loop.
// CallStream's arguments, when its handler runs on the caller's goroutine
// (see CallStream), are the caller's own value, which fn reads only until
// it returns and keeps no reference to, and which no frame limit applies
// to either. Unary interceptors
// (WithInterceptors) do not wrap streams.
func HandleStream[In, Out any](srv *Server, name string, fn func(ctx context.Context, s *ServerStream[In, Out]) error, opts ...RegisterOption) error {
	if fn == nil {
		return fmt.Errorf("dispatch: HandleStream %s: nil function", name)
	}
	ro, err := registerOpts(opts)
	if err != nil {
		return fmt.Errorf("dispatch: HandleStream %s: %w", name, err)
	}
	dot := strings.LastIndex(name, ".")
	short := name[dot+1:]
	if err := ro.check(name[:max(dot, 0)], []string{short}); err != nil {
		return fmt.Errorf("dispatch: HandleStream %s: %w", name, err)
	}
	if err := ro.checkEncoding(reflect.TypeFor[In](), reflect.TypeFor[Out]()); err != nil {
		return fmt.Errorf("dispatch: HandleStream %s: %w", name, err)
	}
	m := &method{
		name:     name,
		takesCtx: true,
		borrows:  ro.borrowing(short),
		encoding: ro.encoding,
		stream: &streamMethod{
			in:  reflect.TypeFor[In](),
			out: reflect.TypeFor[Out](),
			run: func(ctx context.Context, end handlerEnd) error {
				return fn(ctx, &ServerStream[In, Out]{end: end, name: name})
			},
		},
	}
	return srv.add(m)
}

// noop spends a sync.Once without doing anything.
func noop() {}

// streamingError is what a unary call of a streaming method gets, on every
// path.
func streamingError(name string) *Error {
	return &Error{Code: CodeInvalidArgument, Message: "dispatch: " + name + " is a streaming method; call it with OpenStream or CallStream"}
}

// notStreamingError is what a stream opened on a unary method gets.
func notStreamingError(name string) *Error {
	return &Error{Code: CodeInvalidArgument, Message: "dispatch: " + name + " is not a streaming method; call it with Call"}
}

// ServerStream is a handler's side of a stream: the caller's messages
// (Recv) and the handler's (Send). Recv and Send may be used from two
// goroutines at once, but neither from two.
type ServerStream[In, Out any] struct {
	end  handlerEnd
	name string
	msg  In
}

// Recv yields the caller's messages in order. The range ends without an
// error once the caller has closed its side (CloseSend); a failure — the
// caller gone, the context ended, a message that cannot be decoded — is
// yielded once as (nil, err) and ends the range.
//
// The *In yielded is valid only until the next iteration: the stream reuses
// it for the next message, which is how a stream allocates nothing per
// message (as bufio.Scanner's Bytes does). Copy what must be kept.
func (s *ServerStream[In, Out]) Recv() iter.Seq2[*In, error] {
	return func(yield func(*In, error) bool) {
		for {
			it, err := s.end.next()
			if err != nil {
				if err != io.EOF {
					yield(nil, err)
				}
				return
			}
			p, derr := decodeMsg(s.end.codec(), &s.msg, it)
			if derr != nil {
				yield(nil, &Error{Code: CodeInvalidArgument, Message: "dispatch: decoding a message of " + s.name + ": " + derr.Error()})
				return
			}
			if !yield(p, nil) {
				s.end.done() // broke out: a lent message goes back now
				return
			}
		}
	}
}

// Send sends m to the caller. It blocks while the caller's window is full
// (the caller has not consumed what was sent), and fails once the stream's
// context has ended. A nil m sends a zero message. m may be reused when
// Send returns. The first Send says the handler is ready, as Ready does,
// before its message goes.
func (s *ServerStream[In, Out]) Send(m *Out) error {
	if m == nil {
		m = new(Out)
	}
	return s.end.send(m)
}

// Ready tells the caller that the handler is ready: whatever it set up
// before calling Ready (a subscription, say) is in place. The caller's
// Established, and a server stream's Open, return once the handler has
// called Ready, sent its first message or returned, whichever comes first
// — so a handler that must be in place before its caller goes on, and has
// nothing to send yet, calls Ready. Only the first call counts, and one
// after the handler has returned does nothing; it may be called from any
// goroutine. It does not wait for the caller, and a stream that has ended
// makes it do nothing: the next Send or Recv says so.
func (s *ServerStream[In, Out]) Ready() { s.end.ready() }

// Stream is a caller's side of a stream opened by OpenStream: the caller's
// messages (Send, CloseSend) and the handler's (Recv). Send and Recv may
// be used from two goroutines at once, but neither from two; Close from
// any. A Stream must be ranged to its end (Recv) or closed, or the handler
// may wait for its caller for as long as the connection lives.
type Stream[In, Out any] struct {
	end  callerEnd
	name string
	info CallInfo // where it went (CallInfo)
	msg  Out
}

// OpenStream opens a stream to the streaming method name ("Service.Method")
// over any path, as Call would take. ctx bounds the whole stream: its
// deadline and metadata (WithMetadata) reach the handler's context, and
// when it ends the stream ends, on both sides. A capture of reply metadata
// in ctx (CaptureReplyMetadata) receives the handler's when the stream ends
// with the handler's answer. OpenStream fails only for what this end knows
// (a closed Client, an ended ctx, a failed Dial), and names the stream as
// a call's failures name the call (see ErrShutdown: "Inventory.Watch over
// mux: connection is shut down"), as the stream's methods do for the
// failures they return; what the server says —
// no such method, a unary method, shutting down — Recv yields, and
// Established waits for.
func OpenStream[In, Out any](ctx context.Context, c *Client, name string) (*Stream[In, Out], error) {
	return openStream[In, Out](ctx, c, name, true)
}

// openStream is OpenStream; ready says whether the caller may wait until
// the handler is ready (Established), which on the network the open frame
// asks for (WIRE.md, Streams). CallStream does not wait.
func openStream[In, Out any](ctx context.Context, c *Client, name string, ready bool) (*Stream[In, Out], error) {
	s := &Stream[In, Out]{name: name}
	end, err := c.openInterceptedStream(ctx, name, reflect.TypeFor[In](), reflect.TypeFor[Out](), ready, &s.info)
	if err != nil {
		return nil, err
	}
	s.end = end
	return s, nil
}

// CallInfo says where the stream went, as CallWithInfo says of a call:
// its Method, the Path it took, and the RemoteAddr of the Server it went
// to (the address dialled; for a Client of replicas, the replica's). A
// protocol layered on a Client reports it to its own callers so
// (grpczerodial fills a stream's grpc.Peer from it).
func (s *Stream[In, Out]) CallInfo() CallInfo { return s.info }

// openInterceptedStream is openStream inside the Client's stream
// interceptors; *info is set to the stream's CallInfo once it is open.
func (c *Client) openInterceptedStream(ctx context.Context, name string, in, out reflect.Type, ready bool, info *CallInfo) (callerEnd, error) {
	*info = CallInfo{Method: name, Path: c.expectedPath(name, in, out), RemoteAddr: c.remote}
	ics := c.opts.streamInterceptors
	if len(ics) == 0 {
		return c.openStream(ctx, name, in, out, ready, info)
	}
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	// The interceptors learn the method, the path the Client means to take
	// and the address, as a call's do, and see them corrected once the
	// stream is open.
	ci := new(CallInfo)
	*ci = *info
	ctx = context.WithValue(ctx, callInfoKey{}, ci)
	ctx, count := withStreamMessages(ctx)
	sctx, done, err := beginStream(ctx, ics, name)
	if err != nil {
		return nil, err
	}
	end, err := c.openStream(sctx, name, in, out, ready, ci)
	*info = *ci
	if err != nil {
		done(err)
		return nil, err
	}
	return &endHooked{callerEnd: end, end: done, count: count}, nil
}

// Send sends m to the handler. It blocks while the handler's window is full
// (the handler has not consumed what was sent), and fails once the stream
// has ended — with ctx's error as an *Error when ctx ended, with the
// handler's error when it failed, with ErrStreamDone otherwise. A nil m
// sends a zero message. m may be reused when Send returns.
func (s *Stream[In, Out]) Send(m *In) error {
	if m == nil {
		m = new(In)
	}
	if err := s.end.send(m); err != nil {
		return s.end.named(err)
	}
	return nil
}

// CloseSend closes the caller's side: the handler's Recv ends once it has
// taken the messages sent before. The handler's messages go on arriving.
func (s *Stream[In, Out]) CloseSend() error {
	if err := s.end.closeSend(); err != nil {
		return s.end.named(err)
	}
	return nil
}

// Recv yields the handler's messages in order. After the last the range
// ends, yielding the handler's error once as (nil, err) if it failed —
// mapped as a unary call's error is: an *Error with the handler's code —
// or the stream's failure (ctx's error as an *Error, ErrShutdown), which
// names the method and the path. Breaking out of the range closes the
// stream (Close).
//
// The *Out yielded is valid only until the next iteration: the stream
// reuses it for the next message, which is how a stream allocates nothing
// per message (as bufio.Scanner's Bytes does). Copy what must be kept.
func (s *Stream[In, Out]) Recv() iter.Seq2[*Out, error] {
	return func(yield func(*Out, error) bool) {
		finished := false
		defer func() {
			if !finished { // broke out, or the loop's body panicked
				s.end.done()
				s.end.close()
			}
		}()
		for {
			it, err := s.end.next()
			if err != nil {
				finished = true
				if err != io.EOF {
					yield(nil, s.end.named(err))
				}
				return
			}
			p, derr := decodeMsg(s.end.codec(), &s.msg, it)
			if derr != nil {
				s.end.close()
				finished = true
				yield(nil, decodeReplyError(s.name, derr))
				return
			}
			if !yield(p, nil) {
				return
			}
		}
	}
}

// Close ends the stream if it has not ended: the handler's context ends
// with context.Canceled, and the caller's Send and Recv stop. It may be
// called at any time, more than once.
func (s *Stream[In, Out]) Close() error {
	s.end.close()
	return nil
}

// CallStream calls the server-streaming method name with args: it opens a
// stream, sends args as its only message, closes its side and yields the
// handler's messages, then the handler's error if it failed, as
// Stream.Recv does. Breaking out of the range closes the stream; the
// handler's context ends. The *Out yielded is valid only until the next
// iteration.
//
// On the shortcut, when ctx cannot end (ctx.Done() == nil), the handler
// runs on the caller's goroutine, each Send yielding to the range directly:
// the stream then costs what an iterator costs.
func CallStream[In, Out any](ctx context.Context, c *Client, name string, args *In) iter.Seq2[*Out, error] {
	return func(yield func(*Out, error) bool) {
		if args == nil {
			args = new(In)
		}
		if ctx != nil && ctx.Done() == nil && len(c.opts.streamInterceptors) == 0 {
			var out Out
			cdc := c.opts.codec
			emit := func(it flow.Item) bool {
				p, err := decodeMsg(cdc, &out, it)
				if err != nil {
					yield(nil, decodeReplyError(name, err))
					return false
				}
				return yield(p, nil)
			}
			fail := func(err error) { yield(nil, err) }
			if c.fastStream(ctx, name, reflect.TypeFor[In](), reflect.TypeFor[Out](), args, emit, fail) {
				return
			}
		}
		s, err := openStream[In, Out](ctx, c, name, false)
		if err != nil {
			yield(nil, err)
			return
		}
		defer s.Close()
		if err := s.Send(args); err != nil && !s.end.ended() {
			yield(nil, err)
			return
		}
		if err := s.CloseSend(); err != nil && !s.end.ended() {
			yield(nil, err)
			return
		}
		for p, err := range s.Recv() {
			if !yield(p, err) {
				return
			}
		}
	}
}

// openStream opens the caller's end of a stream of name, whose messages are
// of types in and out, on the path a call would take; ready as the
// function openStream's. info is told the path taken, and for a Client of
// replicas the replica's address.
func (c *Client) openStream(ctx context.Context, name string, in, out reflect.Type, ready bool, info *CallInfo) (callerEnd, error) {
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	if c.set != nil {
		return c.set.openStream(ctx, name, in, out, ready, info)
	}
	if c.opts.shortcut != ShortcutOff {
		if e := shortcuts.lookupCached(c.key, c.wire, &c.found); e != nil {
			if end, handled, err := c.shortcutStream(ctx, e, name, in, out, ready); handled {
				path := c.expectedPath(name, in, out)
				info.Path = path
				if err != nil {
					return nil, callError(ctx, name, path, err)
				}
				return end, nil
			}
		} else if c.reachedDraining() {
			return failedStream(ctx, errShuttingDown), nil // as the draining Server's end would
		}
	}
	info.Path = c.netPath
	conn, err := c.netConn(ctx)
	if err == nil {
		var end callerEnd
		if end, err = conn.openStream(ctx, name, c.opts.streamWindow, ready); err == nil {
			return end, nil
		}
	}
	return nil, callError(ctx, name, c.netPath, err)
}

// failedEnd is a stream the server refused at once, on the shortcut: what
// the network would carry back in the first end frame. When the stream
// failed as its connection would, name and path are what err names
// (named); otherwise name is empty, and err, the Server's answer, is
// returned as it is.
type failedEnd struct {
	err  error
	name string
	path Path
}

// failedStream returns a failedEnd for err, handing the captures of ctx the
// metadata of the end (none), as an end frame would.
func failedStream(ctx context.Context, err error) failedEnd {
	capturesOf(ctx).deliver(nil)
	return failedEnd{err: err}
}

func (f failedEnd) send(any) error           { return f.err }
func (f failedEnd) closeSend() error         { return nil }
func (f failedEnd) next() (flow.Item, error) { return flow.Item{}, f.err }
func (f failedEnd) done()                    {}
func (f failedEnd) close()                   {}
func (f failedEnd) ended() bool              { return true }
func (f failedEnd) codec() codec.Codec       { return codec.Msgpack }

func (f failedEnd) named(err error) error {
	if f.name == "" {
		return err
	}
	return callError(context.Background(), f.name, f.path, err)
}

// openTooLarge is the error of opening a stream whose opening frame, its
// metadata, is over the frame limit; nothing was sent.
func openTooLarge(name string, err error) error {
	return fmt.Errorf("dispatch: opening a stream of %s: %w", name, err)
}

// keep returns b emptied for reuse, or nil when it is too large to keep.
func keep(b []byte) []byte {
	if cap(b) > maxKeptBuffer {
		return nil
	}
	return b[:0]
}
