package dispatch

import (
	"context"
	"io"
	"reflect"
	"sync"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/rpcwire"
)

// Streams on the shortcut. In copy mode each message is encoded by its
// sender and decoded by its receiver, as on the network, through the same
// inbox and credit, and checked against the frame limits the network would
// apply. In direct mode (a ShortcutDirect Client, a method registered with
// Borrows, the same Out type on both sides) the handler's messages pass by
// pointer through a rendezvous: the caller gets the handler's own value,
// and the handler's Send returns once the caller is done with it. The
// caller's messages go through the codec as in copy mode: a rendezvous
// both ways would deadlock the ordinary bidirectional shape — either side
// Sending from inside its Recv loop while the other's Send waits for it —
// so one direction must not wait for its receiver's consumer, and the
// handler's is the one that carries streams' volume. The handler runs on a
// Server worker, holding the Server's gate as a call does, except in
// CallStream's fast path (fastStream).

// msgFrame is the header of a message frame, for the frame-limit checks of
// copy mode: the same as the network's but for the Seq's digits.
var msgFrame = map[string]string{rpcwire.Seq: "0", rpcwire.Stream: rpcwire.StreamMsg}

// frameCheck applies to a message of copy mode what the network would: a
// message over the sender's limit fails its Send and nothing is sent
// (tooLarge); one over the receiver's only makes the receiver drop the
// connection, and lost is then the error the caller gets for that, as the
// network words it: the Server closed the connection (toServer), or the
// Client refused the frame.
func frameCheck(name string, body []byte, sender, receiver int, toServer bool) (tooLarge, lost error) {
	if len(body)+256 < min(sender, receiver) {
		return nil, nil // far from either: skip building the frame
	}
	m := transport.Message{Header: msgFrame, Body: body}
	if _, err := frame.Check(&m, sender); err != nil {
		return msgTooLarge(name, err), nil
	}
	if _, err := frame.Check(&m, receiver); err != nil {
		if toServer {
			return nil, errServerClosed
		}
		return nil, frameRefused(&m, receiver)
	}
	return nil, nil
}

// endCheck applies to the end of a copy-mode stream of name, with reply
// metadata md and the handler's error e, what the network would
// (serverConn.endStream): an end over the Server's limit, sender, goes
// without its metadata, as CodeInternal (endTooLarge); one over the
// Client's only, receiver, makes the Client drop the connection, and lost
// is then the caller's error, in the network's words. An end without
// metadata whose error is far from the limits, the common one, builds
// nothing.
func endCheck(name string, md Metadata, e *Error, sender, receiver int) (_ Metadata, _ *Error, lost error) {
	if len(md) == 0 && (e == nil || headerEstimate("", nil)+len(e.Message)+len(e.Code) < min(sender, receiver)) {
		return md, e, nil
	}
	m := transport.Message{Header: endHeader("0", md, e)}
	if _, err := frame.Check(&m, sender); err != nil {
		return nil, endTooLarge(name, err), nil
	}
	if _, err := frame.Check(&m, receiver); err != nil {
		return nil, e, frameRefused(&m, receiver)
	}
	return md, e, nil
}

// openCheck applies to the opening of a stream of name with ctx what the
// network would: an opening frame over the Client's limit, or with too
// many header entries, fails to open and nothing is sent (tooLarge); one
// over the Server's only makes the Server drop the connection (lost). The
// opening frame has no body, so the check is exact in direct mode too. A
// stream without much metadata, the common one, builds no frame.
func (c *Client) openCheck(ctx context.Context, e *entry, name string) (tooLarge, lost error) {
	sizes := c.sizes(ctx, e, name, nil)
	if !sizes.near {
		return nil, nil
	}
	refused, lost := c.frameCheck(ctx, name, nil, true, sizes.server)
	if refused != nil {
		return openTooLarge(name, refused), nil
	}
	return nil, lost
}

// shortcutStream opens a stream on e's Server, a Server of this process. It
// reports handled false when the Server has stopped, so that the stream
// goes to the transport, as a call would.
func (c *Client) shortcutStream(ctx context.Context, e *entry, name string, in, out reflect.Type) (callerEnd, bool, error) {
	srv := e.srv
	if entered, err := c.enterShortcut(ctx, srv); !entered {
		switch err {
		case nil:
			return nil, false, nil
		case errShuttingDown:
			return failedStream(ctx, err), true, nil
		}
		return nil, true, err
	}
	if tooLarge, lost := c.openCheck(ctx, e, name); tooLarge != nil || lost != nil {
		srv.gate.leave()
		if lost != nil {
			return failedEnd{lost}, true, nil // the Server drops the connection: no end arrives
		}
		return nil, true, tooLarge
	}
	m, direct, cdc, e2 := c.streamMethod(srv, name, in, out)
	if e2 != nil {
		srv.gate.leave()
		return failedStream(ctx, e2), true, nil
	}
	s := newMemStream(ctx, c, e, m, direct, cdc)
	srv.work(s) // s.run leaves the gate when the handler returns
	return s, true, nil
}

// streamMethod finds the streaming method name on srv for a caller whose
// messages are of types in and out, and says whether the stream runs in
// direct mode, and with which codec the Server reads the caller's.
func (c *Client) streamMethod(srv *Server, name string, in, out reflect.Type) (*method, bool, codec.Codec, *Error) {
	m, e := c.method(srv, name)
	if e != nil {
		return nil, false, nil, e
	}
	if m.stream == nil {
		return nil, false, nil, notStreamingError(name)
	}
	cdc, e := srv.codecFor(c.ctype)
	if e != nil {
		return nil, false, nil, e
	}
	direct := c.opts.shortcut == ShortcutDirect && m.borrows && m.stream.out == out
	if direct && m.stream.in != in {
		direct = false // the fast path's arguments go by pointer: both must match
	}
	return m, direct, cdc, nil
}

// memStream is a stream on the shortcut: the caller's side, and through
// memHandler the handler's.
type memStream struct {
	c           *Client
	srv         *Server
	ent         *entry
	m           *method
	ctx         context.Context // the caller's
	hctx        *shortcutCtx    // the handler's
	direct      bool
	cdc         codec.Codec // the Server's, for the caller's messages and the handler's
	serverLimit int

	up     *flow.Inbox  // caller → handler
	upCr   *flow.Credit // copy mode
	down   *flow.Inbox  // handler → caller
	downCr *flow.Credit // copy mode

	closed     chan struct{} // closed by Close
	once       sync.Once
	halfClosed bool

	mu     sync.Mutex
	over   bool // the handler has returned
	result error
	gaveUp bool  // the caller stopped before the end: no capture
	lost   error // set by fail: the stream's end, whatever the handler returns
}

func newMemStream(ctx context.Context, c *Client, e *entry, m *method, direct bool, cdc codec.Codec) *memStream {
	s := newFastStream(ctx, c, e, m, direct, cdc)
	s.closed = make(chan struct{})
	s.upCr = flow.NewCredit(s.srv.opts.streamWindow, true)
	s.up = flow.NewInbox(s.srv.opts.streamWindow, s.upCr.Grant)
	s.downCr = flow.NewCredit(c.opts.streamWindow, true)
	s.down = flow.NewInbox(c.opts.streamWindow, s.downCr.Grant)
	return s
}

// run is the handler's task, on a Server worker.
func (s *memStream) run() {
	var e *Error
	returned := false
	defer func() {
		if !returned {
			e = goexitError(s.m.name)
		}
		md := s.hctx.sealReply()
		// The end has no body: direct mode measures it too.
		md, e, lost := endCheck(s.m.name, md, e, s.serverLimit, s.c.limit)
		result := errOf(e)
		if lost != nil {
			// The Client would drop a connection that sent it this end:
			// the caller gets what a lost connection gives, and no end.
			result = lost
		}
		s.up.Done()  // a value the handler holds goes back
		s.up.Close() // what it did not take is dropped
		s.mu.Lock()
		if s.lost != nil {
			// The connection was lost first (fail): the handler's
			// result is only its context's end, which the loss caused.
			result, lost = s.lost, s.lost
		}
		s.over, s.result = true, result
		if !s.gaveUp && lost == nil {
			capturesOf(s.ctx).deliver(md) // before the caller can see the end
		}
		s.mu.Unlock()
		if result != nil {
			s.upCr.Abort(result)
		} else {
			s.upCr.Abort(ErrStreamDone)
		}
		s.down.Finish(result)
		s.hctx.finish()
		s.srv.gate.leave()
	}()
	e = s.srv.invokeStream(s.hctx, s.m, (*memHandler)(s))
	returned = true
}

// Check and Wait make memStream the caller's flow.Waiter: it stops waiting when
// its context ends, when it closes the stream, or when the Client or the
// Server stops, as a connection would fail.
func (s *memStream) Check() error {
	select {
	case <-s.closed:
		return ErrStreamDone
	default:
	}
	if s.ctx.Err() != nil {
		s.giveUp()
		return ctxError(s.ctx)
	}
	if s.c.closedFlag.Load() || s.srv.stopped.Load() {
		s.giveUp()
		return s.c.stoppedError()
	}
	return nil
}

func (s *memStream) Wait(ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-s.closed:
		return ErrStreamDone
	case <-s.ctx.Done():
		s.giveUp()
		return ctxError(s.ctx)
	case <-s.c.life.Done():
	case <-s.srv.stopping:
	}
	s.giveUp()
	return s.c.stoppedError()
}

func (s *memStream) giveUp() {
	s.mu.Lock()
	s.gaveUp = true
	s.mu.Unlock()
}

func (s *memStream) codec() codec.Codec { return s.c.opts.codec }

func (s *memStream) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.over
}

func (s *memStream) next() (flow.Item, error) { return s.down.Next(s) }

func (s *memStream) done() { s.down.Done() }

// sendError is what the caller's Send returns once the handler has
// returned.
func (s *memStream) sendError(err error) error {
	if err == ErrStreamDone {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.result != nil {
			return s.result
		}
	}
	return err
}

func (s *memStream) send(m any) error {
	if err := s.Check(); err != nil {
		return err
	}
	if s.halfClosed {
		return ErrStreamDone
	}
	body, err := encodeMsg(s.c.opts.codec, s.up.Buffer(), s.m.name, m)
	if err != nil {
		return err
	}
	if tooLarge, lost := frameCheck(s.m.name, body, s.c.limit, s.serverLimit, true); tooLarge != nil {
		return tooLarge
	} else if lost != nil {
		// The Server would drop a connection that sent it this frame.
		s.fail(lost)
		return lost
	}
	if err := s.upCr.Acquire(len(body), s); err != nil {
		return s.sendError(err)
	}
	return s.up.Put(body)
}

func (s *memStream) closeSend() error {
	if !s.halfClosed {
		s.halfClosed = true
		s.up.Finish(nil)
	}
	return nil
}

// close is Close: the handler's context ends, and the caller takes no more.
func (s *memStream) close() {
	s.once.Do(func() { close(s.closed) })
	s.giveUp()
	why := context.Canceled
	if err := s.ctx.Err(); err != nil {
		why = err // the caller's context ended first: the handler's ends for that
	}
	// The context first, so that a handler whose Send fails below finds
	// it ended.
	s.hctx.cancel(why)
	s.down.Close()
}

// fail ends the stream as a dropped connection would: the caller gets err,
// which matches ErrShutdown and says why, and the handler's context ends.
// err is recorded, and the caller's side ended with it, before the
// handler's context ends: a handler that returns for that end (its Recv
// failing) must not end the stream with context.Canceled first, which the
// network's caller never sees — its stream ends with the connection.
func (s *memStream) fail(err error) {
	s.mu.Lock()
	s.gaveUp = true
	if s.lost == nil {
		s.lost = err
	}
	s.mu.Unlock()
	s.down.Finish(err)
	s.hctx.cancel(context.Canceled)
}

// memHandler is the handler's side of a memStream.
type memHandler memStream

func (h *memHandler) Check() error { return h.hctx.Err() }

func (h *memHandler) Wait(ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-h.hctx.Done():
		return h.hctx.Err()
	}
}

func (h *memHandler) codec() codec.Codec { return h.cdc }

func (h *memHandler) next() (flow.Item, error) { return h.up.Next(h) }

func (h *memHandler) done() { h.up.Done() }

func (h *memHandler) send(m any) error {
	if err := h.hctx.Err(); err != nil {
		return err
	}
	if h.direct {
		return h.down.Lend(m, h, ErrStreamDone)
	}
	body, err := encodeMsg(h.cdc, h.down.Buffer(), h.m.name, m)
	if err != nil {
		return err
	}
	s := (*memStream)(h)
	if tooLarge, lost := frameCheck(h.m.name, body, s.serverLimit, h.c.limit, false); tooLarge != nil {
		return tooLarge
	} else if lost != nil {
		// The Client would drop a connection that sent it this frame.
		s.fail(lost)
		return context.Canceled
	}
	if err := h.downCr.Acquire(len(body), h); err != nil {
		return err
	}
	return h.down.Put(body)
}

// fastEnd is the handler's side of a stream run by fastStream: the one
// message is the caller's arguments, and Send yields to the caller's range.
type fastEnd struct {
	s      *memStream // for its fields; no inbox or credit is used
	args   flow.Item
	taken  bool
	emit   func(flow.Item) bool
	buf    []byte
	inEmit bool  // the caller's loop body is running
	broke  bool  // the caller broke out of its range, or lost is set
	lost   error // the caller's error when a Send lost the connection
}

func (f *fastEnd) codec() codec.Codec { return f.s.cdc }

func (f *fastEnd) done() {}

func (f *fastEnd) next() (flow.Item, error) {
	if err := f.s.hctx.Err(); err != nil {
		return flow.Item{}, err
	}
	if f.taken {
		return flow.Item{}, io.EOF
	}
	f.taken = true
	return f.args, nil
}

func (f *fastEnd) send(m any) error {
	// After the caller broke out, the context has ended: Send fails and
	// never calls the caller's yield again.
	if err := f.s.hctx.Err(); err != nil {
		return err
	}
	it := flow.Item{Ptr: m}
	if !f.s.direct {
		body, err := encodeMsg(f.s.cdc, f.buf[:0], f.s.m.name, m)
		if err != nil {
			return err
		}
		f.buf = keep(body)
		if tooLarge, lost := frameCheck(f.s.m.name, body, f.s.serverLimit, f.s.c.limit, false); tooLarge != nil {
			return tooLarge
		} else if lost != nil {
			// The Client would drop a connection that sent it this
			// frame: the caller's range gets lost instead of the end.
			f.broke, f.lost = true, lost
			f.s.hctx.cancel(context.Canceled)
			return context.Canceled
		}
		it = flow.Item{Body: body}
	}
	f.inEmit = true
	ok := f.emit(it)
	f.inEmit = false
	if !ok {
		f.broke = true
		f.s.hctx.cancel(context.Canceled)
	}
	return nil
}

// fastStream runs CallStream on the shortcut with the handler on the
// caller's goroutine, when ctx cannot end: nothing can then stop the caller
// waiting but the handler, and the handler's input — args alone — is all
// there before it starts, so no goroutine, channel or window is needed.
// Each Send calls emit, the caller's range; fail yields the stream's error.
// It reports false when the stream must take the ordinary way.
func (c *Client) fastStream(ctx context.Context, name string, in, out reflect.Type, args any, emit func(flow.Item) bool, fail func(error)) bool {
	if c.opts.shortcut == ShortcutOff {
		return false
	}
	if c.set != nil {
		return c.set.fastStream(ctx, name, in, out, args, emit, fail)
	}
	e := shortcuts.lookupCached(c.key, c.wire, &c.found)
	if e == nil {
		return false
	}
	srv := e.srv
	if len(srv.opts.streamInterceptors) > 0 {
		return false // they see the stream the ordinary way
	}
	m, direct, cdc, e2 := c.streamMethod(srv, name, in, out)
	if e2 != nil || c.closedFlag.Load() {
		return false // the ordinary way words every refusal
	}
	if len(outgoing(ctx)) > 0 && c.sizes(ctx, e, name, nil).near {
		return false // and checks the opening frame
	}
	if !srv.gate.enter() {
		return false
	}
	defer srv.gate.leave()
	c.reached.Store(srv)
	f := &fastEnd{s: newFastStream(ctx, c, e, m, direct, cdc), emit: emit}
	// Deferred, so that a panic or Goexit of the caller's loop body, which
	// goes on up through the handler, still ends the call.
	defer f.s.hctx.finish()
	f.args.Ptr = args
	if !direct {
		body, err := encodeMsg(c.opts.codec, nil, name, args)
		if err == nil {
			if tooLarge, lost := frameCheck(name, body, c.limit, f.s.serverLimit, true); tooLarge != nil {
				err = tooLarge
			} else if lost != nil {
				err = lost
			}
		}
		if err != nil {
			fail(err)
			return true
		}
		f.args = flow.Item{Body: body}
	}
	err := f.invoke()
	// Here only if the handler returned or panicked: a panic or Goexit of
	// the caller's loop body has gone on up.
	if !f.broke {
		switch {
		case c.closedFlag.Load() || srv.stopped.Load():
			err = c.stoppedError()
		default:
			md := f.s.hctx.sealReply()
			// The end has no body: direct mode measures it too.
			md, e, lost := endCheck(name, md, toError(err), f.s.serverLimit, c.limit)
			err = errOf(e)
			if lost != nil {
				err = lost // the Client would drop the connection: no end arrives
			} else {
				capturesOf(ctx).deliver(md)
			}
		}
	}
	switch {
	case f.lost != nil:
		fail(f.lost)
	case err != nil && !f.broke:
		fail(err)
	}
	return true
}

// newFastStream is the part of a memStream a fastEnd uses; newMemStream
// adds the rest.
func newFastStream(ctx context.Context, c *Client, e *entry, m *method, direct bool, cdc codec.Codec) *memStream {
	path := PathShortcutCopy
	if direct {
		path = PathShortcutDirect
	}
	_, hctx := c.handlerCtx(ctx, e, m, path) // m.seesCtx: a stream always does
	s := &memStream{c: c, srv: e.srv, ent: e, m: m, ctx: ctx, hctx: hctx, direct: direct, cdc: cdc, serverLimit: e.limit}
	if s.serverLimit <= 0 {
		s.serverLimit = c.limit
	}
	return s
}

// invoke runs the handler under the panic rule, except for panics of the
// caller's loop body, which go on up as they would from any iterator.
func (f *fastEnd) invoke() (err error) {
	defer func() {
		if r := recover(); r != nil {
			if f.inEmit {
				panic(r) // the caller's; fastStream's defers end the call
			}
			err = f.s.srv.panicked(f.s.m, r)
		}
	}()
	return errOf(toError(f.s.m.stream.run(f.s.hctx, f)))
}
