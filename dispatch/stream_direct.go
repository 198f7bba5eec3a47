package dispatch

import (
	"context"
	"io"
	"reflect"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
)

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

// ready does nothing: nobody waits for it, CallStream's caller least of
// all, whose goroutine runs the handler.
func (f *fastEnd) ready() {}

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
	if e2 != nil || c.closed.IsSet() {
		return false // the ordinary way words every refusal
	}
	if len(outgoing(ctx)) > 0 && c.sizes(ctx, e, name, nil).near {
		return false // and checks the opening frame
	}
	if !srv.gate.enter() {
		return false
	}
	defer srv.gate.leave()
	c.noteReached(srv)
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
			fail(f.s.named(err))
			return true
		}
		f.args = flow.Item{Body: body}
	}
	err := f.invoke()
	// Here only if the handler returned or panicked: a panic or Goexit of
	// the caller's loop body has gone on up.
	if !f.broke {
		switch {
		case c.closed.IsSet() || srv.stopped.IsSet():
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
		fail(f.s.named(f.lost))
	case err != nil && !f.broke:
		fail(f.s.named(err))
	}
	return true
}

// newFastStream is the part of a memStream a fastEnd uses; newMemStream
// adds the rest.
func newFastStream(ctx context.Context, c *Client, e *entry, m *method, direct bool, cdc codec.Codec) *memStream {
	s := &memStream{callerWait: callerWait{ctx: ctx, c: c, srv: e.srv}, ent: e, m: m, direct: direct, cdc: cdc, serverLimit: e.limit}
	_, s.hctx = c.handlerCtx(ctx, e, m, s.path()) // m.seesCtx: a stream always does
	s.stream = s
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
