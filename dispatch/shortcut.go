package dispatch

import (
	"context"
	"sync"

	"github.com/zerodial/transport/codec"
)

// shortcut makes a call on e's Server, a Server of this process, with no
// socket. It goes through the same router, interceptor chain, panic rule
// and error mapping as a call from the network (Server.lookup,
// Server.invoke), applies the checks the network applies in the same order,
// and words its own failures as the network path does. While a Shutdown
// waits for the calls in flight, it answers CodeUnavailable, as a connection
// still open to the Server does; once the Server has stopped, it reports
// false, and the call goes to the transport, as a network call would redial.
//
// info, when not nil, is told the path the call takes; so is the caller,
// by path, when handled.
func (c *Client) shortcut(ctx context.Context, e *entry, name string, args, reply any, info *CallInfo) (handled bool, path Path, err error) {
	srv := e.srv
	var ans *answer
	if capt := capturesOf(ctx); capt != nil {
		ans = &answer{}
		defer func() { ans.deliver(capt) }()
	}
	if entered, err := c.enterShortcut(ctx, srv); !entered {
		if err == nil {
			return false, "", nil
		}
		zero(reply)
		if err == errShuttingDown {
			ans.arrive(nil)
		}
		return true, c.expectedPath(name, nil, nil), err
	}
	defer srv.gate.leave()
	if c.opts.shortcut == ShortcutDirect {
		// A request whose headers alone the network refuses goes as copy
		// mode, which refuses it in the network's words.
		if m, _ := c.method(srv, name); m != nil && m.borrows && m.stream == nil && !c.headersRefused(ctx, e, name) {
			if ok, err := c.direct(ctx, e, m, args, reply, ans); ok {
				if info != nil {
					info.Path = PathShortcutDirect
				}
				return true, PathShortcutDirect, c.outcome(ctx, srv, reply, err, ans)
			}
		}
	}
	if info != nil {
		info.Path = PathShortcutCopy
	}
	return true, PathShortcutCopy, c.outcome(ctx, srv, reply, c.copyCall(ctx, e, name, args, reply, ans), ans)
}

// noteReached records srv as the Server the shortcut last reached. It is
// stored only when it changes: a store on every call or stream is a write
// barrier while the GC runs, and a cache line written that every caller
// of c shares (BenchmarkCall's shortcut rows).
func (c *Client) noteReached(srv *Server) {
	if c.reached.Load() != srv {
		c.reached.Store(srv)
	}
}

// enterShortcut begins a call or stream on the shortcut to srv: it enters
// srv's gate, as a connection's call does, and reports true when the call
// may go on (the caller then leaves the gate). Otherwise err is what the call
// is refused with at once — errShuttingDown while srv drains, as a
// connection still open to it would be answered, ErrShutdown once c is
// closed, ctx's error once ctx has ended — or nil once srv has stopped:
// the call then goes to the transport, as a network call would redial.
func (c *Client) enterShortcut(ctx context.Context, srv *Server) (entered bool, err error) {
	c.noteReached(srv)
	if !srv.gate.enter() {
		if srv.isDraining() {
			return false, errShuttingDown
		}
		return false, nil
	}
	if c.closed.IsSet() {
		srv.gate.leave()
		return false, ErrShutdown
	}
	if ctx.Err() != nil {
		srv.gate.leave()
		return false, ctxError(ctx)
	}
	return true, nil
}

// answer records, for a caller that captures reply metadata
// (CaptureReplyMetadata), whether the call got the answer the network
// would have carried back as a reply, and the metadata that reply would
// have carried. A nil *answer records nothing.
type answer struct {
	arrived bool
	md      Metadata
}

// arrive records a reply with metadata md.
func (a *answer) arrive(md Metadata) {
	if a != nil {
		a.arrived, a.md = true, md
	}
}

// lost records that the caller gets no reply after all: its context ended
// first, or the Client or the Server stopped, as a connection would fail.
func (a *answer) lost() {
	if a != nil {
		a.arrived, a.md = false, nil
	}
}

// deliver gives the metadata of a reply that arrived to the captures.
func (a *answer) deliver(c *capture) {
	if a.arrived {
		c.deliver(a.md)
	}
}

// outcome applies the rules the network path applies on the caller's side: a
// context that ended first wins; a Client or Server that stopped meanwhile
// fails the call, as a closed connection would (stoppedError); a failed call
// leaves *reply zero.
func (c *Client) outcome(ctx context.Context, srv *Server, reply any, err error, ans *answer) error {
	if ctx.Err() != nil {
		err = ctxError(ctx)
		ans.lost()
	} else if c.closed.IsSet() || srv.stopped.IsSet() {
		err = c.stoppedError()
		ans.lost()
	}
	if err != nil {
		zero(reply)
	}
	return err
}

// stoppedError is the error of a call or stream on the shortcut that the
// Client or its Server stopped, as the network words it: ErrShutdown itself
// when the Client was closed, the connection's end when the Server was.
func (c *Client) stoppedError() error {
	if c.closed.IsSet() {
		return ErrShutdown
	}
	return errServerClosed
}

// errOf returns e as an error, nil when e is nil (not a nil *Error in a
// non-nil interface).
func errOf(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}

// handlerCtx returns the handler's context for a call of m, and the
// shortcutCtx to end when the call returns (nil if none). A method that
// cannot see its context (no context parameter, no interceptors) gets the
// caller's, which nobody observes, at no cost.
func (c *Client) handlerCtx(ctx context.Context, e *entry, m *method, path Path) (context.Context, *shortcutCtx) {
	if !m.seesCtx {
		return ctx, nil
	}
	sc := &shortcutCtx{parent: ctx, client: c}
	sc.fromContext(ctx, m.name)
	sc.peer = e.peer(path)
	return sc, sc
}

// invoke runs the call through the Server's chain with the handler's
// context, and ends that context when the call returns, as the network
// does once the reply is sent. It runs the handler on the caller's
// goroutine, for calls whose context cannot end.
func (c *Client) invoke(ctx context.Context, ent *entry, m *method, path Path, args, reply any) (*Error, Metadata) {
	hctx, sc := c.handlerCtx(ctx, ent, m, path)
	e := ent.srv.invoke(hctx, m, args, reply)
	var md Metadata
	if sc != nil {
		md = sc.sealReply()
		sc.finish()
	}
	return e, md
}

// runHandler runs the call with the handler's own values a and r, and reports
// whether the handler returned (false: the caller stopped waiting first; the
// caller's error is then outcome's to choose). When ctx can end, the handler
// runs on one of the Server's workers while the caller waits for it, for
// ctx, or for the Client or the Server to stop, so that Call returns then,
// as it does on the network; the handler's context ends at that moment too,
// and the handler goes on with values the caller never sees again.
func (c *Client) runHandler(ctx context.Context, ent *entry, m *method, path Path, a, r any) (*Error, Metadata, bool) {
	if ctx.Done() == nil {
		e, md := c.invoke(ctx, ent, m, path, a, r)
		return e, md, true
	}
	srv := ent.srv
	d := newDetached(srv)
	hctx, hsc := c.handlerCtx(ctx, ent, m, path)
	d.srv, d.m, d.ctx, d.sctx, d.a, d.r = srv, m, hctx, hsc, a, r
	srv.work(d)
	if why := d.wait(ctx, c.closed.Signal(), srv.stopped.Signal()); why != nil && d.abandon() {
		if hsc != nil {
			hsc.cancel(why)
		}
		return nil, nil, false
	}
	e, md := d.e, d.md
	d.release()
	return e, md, true
}

// direct runs a call of m, a method that borrows (Borrows), with the
// caller's own values. It reports false when the caller's types are not the
// handler's, or when the call may return before the handler and its
// arguments cannot be deep-copied: the call then runs in copy mode, which
// decodes exactly as the network would. Nothing is encoded, so the checks of
// encoding and of frame sizes do not apply to args and reply; the reply's
// metadata is measured as the network measures it (replyHeadersCheck), and
// the request's is by the caller (headersRefused).
func (c *Client) direct(ctx context.Context, ent *entry, m *method, args, reply any, ans *answer) (handled bool, err error) {
	srv := ent.srv
	if c.ctype != codec.Msgpack.Name() { // every Server reads msgpack
		if _, e := srv.codecFor(c.ctype); e != nil {
			ans.arrive(nil)
			return true, e
		}
	}
	a, ok := m.direct(args)
	if !ok || !m.zeroReply(reply) {
		return false, nil
	}
	if ctx.Done() == nil {
		// The call cannot end before the handler returns: lend it the
		// caller's values.
		e, md := c.invoke(ctx, ent, m, PathShortcutDirect, a, reply)
		ans.arrive(md)
		if len(md) > 0 || e != nil {
			return true, c.replyHeadersCheck(ent, m.name, reply, md, e, ans)
		}
		return true, nil
	}
	ha, hr := m.newPair()
	if m.copyArgs(ha, a) != nil {
		return false, nil // an interface holding what cannot be copied
	}
	e, md, returned := c.runHandler(ctx, ent, m, PathShortcutDirect, ha, hr)
	if !returned {
		return true, ErrShutdown // outcome puts ctx's error first
	}
	ans.arrive(md)
	if len(md) > 0 || e != nil {
		if err := c.replyHeadersCheck(ent, m.name, hr, md, e, ans); err != nil {
			return true, err // an error reply always returns here
		}
	}
	m.moveReply(reply, hr)
	return true, nil
}

var buffers = sync.Pool{New: func() any { return new([]byte) }}

// copyCall runs the codec once each way: args are encoded and decoded into
// the handler's own values, and the reply encoded and decoded into the
// caller's, exactly as the network path would, so caller and handler share
// no memory.
func (c *Client) copyCall(ctx context.Context, ent *entry, name string, args, reply any, ans *answer) error {
	srv := ent.srv
	bp := buffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBody {
			buffers.Put(bp)
		}
	}()
	body, err := encodeArgs(c.opts.codec, (*bp)[:0], name, args)
	*bp = body[:0]
	if err != nil {
		return err
	}
	sizes := c.sizes(ctx, ent, name, body)
	if err := c.requestCheck(ctx, name, body, sizes); err != nil {
		return err
	}
	// From here on the Server answers, as it would with a reply.
	ans.arrive(nil)
	m, e := c.method(srv, name)
	if e == nil {
		e = shapeError(m, false)
	}
	if e != nil {
		return e
	}
	cdc, e := srv.codecFor(c.ctype)
	if e != nil {
		return e
	}
	a, r := m.newPair()
	if e := decodeArgs(cdc, srv.opts.strict, m, body, a); e != nil {
		return e
	}
	e, md, returned := c.runHandler(ctx, ent, m, PathShortcutCopy, a, r)
	if !returned {
		return ErrShutdown // outcome puts ctx's error first
	}
	ans.arrive(md)
	if e != nil {
		return c.errorReplyCheck(name, md, e, sizes.server, ans)
	}
	body, e = encodeReply(cdc, body[:0], m.name, r)
	*bp = body[:0]
	if e != nil {
		return e
	}
	if c.sizes(ctx, ent, name, body).near || len(md) > 0 {
		if err := c.replyCheck(name, body, md, nil, sizes.server, ans); err != nil {
			return err
		}
	}
	zero(reply)
	return decodeReply(c.opts.codec, name, body, reply)
}
