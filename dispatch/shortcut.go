package dispatch

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/rpcwire"
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
// info, when not nil, is told the path the call takes.
func (c *Client) shortcut(ctx context.Context, e *entry, name string, args, reply any, info *CallInfo) (handled bool, err error) {
	srv := e.srv
	var ans *answer
	if capt := capturesOf(ctx); capt != nil {
		ans = &answer{}
		defer func() { ans.deliver(capt) }()
	}
	if entered, err := c.enterShortcut(ctx, srv); !entered {
		if err == nil {
			return false, nil
		}
		zero(reply)
		if err == errShuttingDown {
			ans.arrive(nil)
		}
		return true, err
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
				return true, c.outcome(ctx, srv, reply, err, ans)
			}
		}
	}
	if info != nil {
		info.Path = PathShortcutCopy
	}
	return true, c.outcome(ctx, srv, reply, c.copyCall(ctx, e, name, args, reply, ans), ans)
}

// enterShortcut begins a call or stream on the shortcut to srv: it enters
// srv's gate, as a connection's call does, and reports true when the call
// may go on (the caller then leaves the gate). Otherwise err is what the call
// is refused with at once — errShuttingDown while srv drains, as a
// connection still open to it would be answered, ErrShutdown once c is
// closed, ctx's error once ctx has ended — or nil once srv has stopped:
// the call then goes to the transport, as a network call would redial.
func (c *Client) enterShortcut(ctx context.Context, srv *Server) (entered bool, err error) {
	c.reached.Store(srv)
	if !srv.gate.enter() {
		if srv.isDraining() {
			return false, errShuttingDown
		}
		return false, nil
	}
	if c.closedFlag.Load() {
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
	} else if c.closedFlag.Load() || srv.stopped.Load() {
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
	if c.closedFlag.Load() {
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
	md := outgoing(ctx) // never changed: WithMetadata makes a new map, MetadataFrom hands out copies
	if len(md) == 0 {
		md = nil // as the network delivers it
	}
	sc := &shortcutCtx{callCtx: callCtx{md: md}, parent: ctx, client: c, ent: e, m: m, direct: path == PathShortcutDirect}
	sc.hook = sc
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
	d := detachedCalls.Get().(*detachedCall)
	hctx, hsc := c.handlerCtx(ctx, ent, m, path)
	d.srv, d.m, d.ctx, d.sctx, d.a, d.r = srv, m, hctx, hsc, a, r
	srv.gate.join() // for the handler, which may outlive this call
	srv.work(d)
	if why := d.wait(ctx, c.life.Done(), srv.stopping); why != nil {
		if d.state.CompareAndSwap(detachedRunning, detachedAbandoned) {
			// From here on the worker owns d and frees it.
			if hsc != nil {
				hsc.cancel(why)
			}
			return nil, nil, false
		}
		<-d.done // the handler returned meanwhile: take its answer
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

// replyHeadersCheck applies to a direct call's reply r with metadata md, or
// to its error reply e, what the network would, as far as it is not the
// body's to decide: a reply whose headers alone are over a frame limit, or
// have too many entries, fails as it would on the network, in the same
// words — for which r is encoded then, as the network would encode it. It
// returns e when the reply goes. Reply metadata far from the limits, the
// common case, builds nothing.
func (c *Client) replyHeadersCheck(ent *entry, name string, r any, md Metadata, e *Error, ans *answer) error {
	server := ent.limit
	if server <= 0 {
		server = c.limit
	}
	if e != nil {
		return c.errorReplyCheck(name, md, e, server, ans)
	}
	if len(md)+fixedEntries <= frame.MaxHeaderEntries && headerEstimate(name, md) < min(server, c.limit) {
		return nil
	}
	h := make(map[string]string, len(md)+2)
	responseHeader(h, name, "0", nil)
	addMetadata(h, md)
	if _, err := frame.Check(&transport.Message{Header: h}, min(server, c.limit)); err == nil {
		return nil // the body is not measured (Borrows)
	}
	cdc, ce := ent.srv.codecFor(c.ctype)
	if ce != nil {
		return ce
	}
	body, err := appendMarshal(cdc, nil, r)
	if err != nil {
		return encodeError(name, err)
	}
	return c.replyCheck(name, body, md, nil, server, ans)
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
	if e != nil {
		return e
	}
	if m.stream != nil {
		return streamingError(name)
	}
	cdc, e := srv.codecFor(c.ctype)
	if e != nil {
		return e
	}
	a, r := m.newPair()
	if e := decodeArgs(cdc, m, body, a); e != nil {
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
	body, err = appendMarshal(cdc, body[:0], r)
	*bp = body[:0]
	if err != nil {
		return encodeError(m.name, err)
	}
	if c.sizes(ctx, ent, name, body).near || len(md) > 0 {
		if err := c.replyCheck(name, body, md, nil, sizes.server, ans); err != nil {
			return err
		}
	}
	zero(reply)
	return decodeReply(c.opts.codec, name, body, reply)
}

// replyCheck applies to a reply of name, its body body and its metadata
// md, or to its error reply e with md, what the network would: a reply
// over the Server's limit, server, is an error reply without the metadata
// (replyTooLarge); one over the Client's only makes the Client drop the
// connection. It returns e when the reply goes.
func (c *Client) replyCheck(name string, body []byte, md Metadata, e *Error, server int, ans *answer) error {
	h := make(map[string]string, len(md)+4)
	responseHeader(h, name, "0", e)
	addMetadata(h, md)
	resp := transport.Message{Header: h, Body: body}
	if _, err := frame.Check(&resp, server); err != nil {
		ans.arrive(nil) // the error reply goes without the metadata
		return replyTooLarge(name, err)
	}
	if _, err := frame.Check(&resp, c.limit); err != nil {
		ans.lost()
		return frameRefused(&resp, c.limit) // the Client drops a connection that sends it an oversize frame
	}
	return errOf(e)
}

// errorReplyCheck applies to the error reply e of a call of name, with
// its metadata md, what the network would: over the Server's frame limit
// (its metadata or its message), it is CodeInternal without either; over
// the Client's only, the Client drops the connection. An error reply has
// no body, so the check is exact; one far from the limits, the common
// case, builds nothing.
func (c *Client) errorReplyCheck(name string, md Metadata, e *Error, server int, ans *answer) error {
	if len(md)+fixedEntries <= frame.MaxHeaderEntries &&
		headerEstimate(name, md)+len(e.Message)+len(e.Code) < min(server, c.limit) {
		return e
	}
	return c.replyCheck(name, nil, md, e, server, ans)
}

// frameSizes says whether a request is near enough to a frame limit for the
// exact check, which builds the headers the network would send.
type frameSizes struct {
	server int  // the server listener's limit, or the client's if unknown
	near   bool // within reach of the smaller limit, or of the header entries' limit
}

// fixedEntries bounds the entries the network adds to a request's metadata
// in its headers (requestHeader; a stream's opening frame has the most).
const fixedEntries = 6

// sizes estimates, from above, the frame of a request of name made with ctx
// whose body is body. It costs a look at each metadata entry and builds
// nothing: a call far from every limit, the common one, is checked no
// further.
func (c *Client) sizes(ctx context.Context, ent *entry, name string, body []byte) frameSizes {
	server := ent.limit
	if server <= 0 {
		server = c.limit
	}
	md := outgoing(ctx)
	if len(md)+fixedEntries > frame.MaxHeaderEntries {
		return frameSizes{server: server, near: true}
	}
	return frameSizes{server: server, near: len(body)+headerEstimate(name, md) >= min(server, c.limit)}
}

// headerEstimate bounds from above the size of the headers of a frame of
// a call of name with metadata md: the fixed headers, with room to spare,
// and each entry's prefixed key and value with their length prefixes.
func headerEstimate(name string, md Metadata) int {
	n := 512 + len(name)
	for k, v := range md {
		n += len(rpcwire.MetadataPrefix) + len(k) + len(v) + 2*4
	}
	return n
}

// requestCheck applies to a request of name with body body what the
// network would, when sizes says it is near a limit: a request the Client's
// transport refuses fails as the network's does (argsTooLarge: over the
// frame limit, or with too many header entries), and one only the Server
// refuses fails as the connection the Server drops does.
func (c *Client) requestCheck(ctx context.Context, name string, body []byte, sizes frameSizes) error {
	if !sizes.near {
		return nil
	}
	refused, lost := c.frameCheck(ctx, name, body, false, sizes.server)
	if refused != nil {
		return argsTooLarge(name, refused)
	}
	return lost
}

// frameCheck builds the frame a request of name with body body, or the
// opening of a stream of name (open), would be on the network, and checks
// it as the two ends would: refused is the Client's transport's error
// when it is over the Client's frame limit or has too many header
// entries (nothing is sent), for the caller to word; lost is the caller's
// error when only the Server, whose limit is server, refuses it (it drops
// the connection).
func (c *Client) frameCheck(ctx context.Context, name string, body []byte, open bool, server int) (refused, lost error) {
	h := make(map[string]string, 6)
	requestHeader(ctx, h, name, "0", c.ctype)
	if open {
		h[rpcwire.Stream] = rpcwire.StreamOpen
		h[rpcwire.Window] = rpcwire.FormatWindow(c.opts.streamWindow)
	}
	m := transport.Message{Header: h, Body: body}
	if _, err := frame.Check(&m, c.limit); err != nil {
		return err, nil
	}
	if _, err := frame.Check(&m, server); err != nil {
		return nil, errServerClosed // the Server drops a connection that sends it an oversize frame
	}
	return nil, nil
}

// headersRefused reports whether the network would refuse a request of name
// made with ctx whatever its body: its headers alone, the metadata, are
// over a frame limit or have too many entries. Direct mode measures no
// body, but it does refuse such a request, as the network does. A call
// without metadata, the common one, costs a context lookup.
func (c *Client) headersRefused(ctx context.Context, ent *entry, name string) bool {
	if len(outgoing(ctx)) == 0 {
		return false
	}
	return c.requestCheck(ctx, name, nil, c.sizes(ctx, ent, name, nil)) != nil
}

// detachedCall is a shortcut call whose handler runs on a Server worker
// while the caller waits, so that the caller can stop waiting when its
// context ends (Client.runHandler). Pooled: a call costs no channel.
type detachedCall struct {
	srv  *Server
	m    *method
	ctx  context.Context // the handler's
	sctx *shortcutCtx    // the handler's context, when it has its own
	a, r any
	e    *Error
	md   Metadata // the reply's metadata, once the handler has returned

	// state says who owns the call once the handler returns: the caller,
	// while it waits (detachedRunning, then detachedReturned), or the
	// worker, once the caller has gone (detachedAbandoned).
	state atomic.Int32
	done  chan struct{}
}

const (
	detachedRunning int32 = iota
	detachedReturned
	detachedAbandoned
)

var detachedCalls = sync.Pool{New: func() any { return &detachedCall{done: make(chan struct{}, 1)} }}

// run is the worker's part: the handler, then the answer to the caller,
// or, if the caller has gone, the clean-up.
func (d *detachedCall) run() {
	srv := d.srv
	returned := false
	// Deferred, so that a handler that ends its goroutine (runtime.Goexit,
	// as t.FailNow does) still answers its caller and leaves the gate.
	defer func() {
		if !returned {
			d.e = goexitError(d.m.name)
		}
		if d.sctx != nil {
			d.md = d.sctx.sealReply()
			d.sctx.finish()
		}
		// Answer before leaving the gate: a Shutdown that finds the gate
		// idle then stops the Server, and a caller that saw that first
		// would take a finished call for an abandoned one.
		if d.state.CompareAndSwap(detachedRunning, detachedReturned) {
			d.done <- struct{}{} // d is the caller's from here on
			srv.gate.leave()
			return
		}
		srv.gate.leave()
		d.release()
	}()
	d.e = srv.invoke(d.ctx, d.m, d.a, d.r)
	returned = true
}

// wait returns nil when d's handler has returned, or why the caller stops
// waiting first: ctx ended, or life or stopping (the Client's and the
// Server's) closed.
//
// It yields once before it parks. Server.work has just made the worker
// runnable next on this P, so a handler that does not block has usually
// returned by the time the caller runs again, and the caller need not park
// and be woken — which, with another P idle, costs a futex wake on each
// side. This serves BenchmarkCallDeadline (bench: zerodial-*-deadline),
// where it halves the cost of the hand-off; TestDetachedWait tests both ways
// through.
func (d *detachedCall) wait(ctx context.Context, life, stopping <-chan struct{}) error {
	runtime.Gosched()
	select {
	case <-d.done:
		return nil
	default:
	}
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-life:
		return context.Canceled
	case <-stopping:
		return context.Canceled
	}
}

func (d *detachedCall) release() {
	*d = detachedCall{done: d.done}
	detachedCalls.Put(d)
}
