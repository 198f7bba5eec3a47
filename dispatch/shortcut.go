package dispatch

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/zerodial/transport"
)

// shortcut makes a call on srv, a Server of this process, with no socket. It
// goes through the same router, interceptor chain, panic rule and error
// mapping as a call from the network (Server.lookup, Server.invoke) and
// words its own failures as the network path does. It reports false when
// srv is shutting down: the call then goes to the transport, as it would
// have if the shortcut had never found srv.
func (c *Client) shortcut(ctx context.Context, srv *Server, name string, args, reply any) (error, bool) {
	if !srv.gate.enter() {
		return nil, false
	}
	defer srv.gate.leave()
	if c.closedFlag.Load() {
		return ErrShutdown, true
	}
	if ctx.Err() != nil {
		zero(reply)
		return ctxError(ctx), true
	}
	m, e := srv.lookup(name)
	if e != nil {
		zero(reply)
		return e, true
	}
	var hctx context.Context = ctx // seen by nobody, unless seesCtx
	if m.seesCtx {
		md := outgoing(ctx)
		if md != nil {
			md = maps.Clone(md) // the handler's own, as on the network
		}
		hctx = &callContext{Context: ctx, md: md}
	}
	if c.opts.shortcut == ShortcutDirect {
		if a, ok := m.direct(args); ok && m.zeroReply(reply) {
			return c.finish(ctx, reply, errOf(srv.invoke(hctx, m, a, reply))), true
		}
	}
	zero(reply)
	return c.finish(ctx, reply, c.copyCall(srv, hctx, m, args, reply)), true
}

// errOf returns e as an error, nil when e is nil (not a nil *Error in a
// non-nil interface).
func errOf(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}

// finish applies the rules the network path applies on the caller's side: a
// context that ended first wins, a closed Client fails the call, and a
// failed call leaves *reply zero.
func (c *Client) finish(ctx context.Context, reply any, err error) error {
	if ctx.Err() != nil {
		err = ctxError(ctx)
	} else if c.closedFlag.Load() {
		err = ErrShutdown
	}
	if err != nil {
		zero(reply)
	}
	return err
}

var buffers = sync.Pool{New: func() any { return new([]byte) }}

// copyCall runs the codec once each way: args are encoded and decoded into
// the handler's own values, and the reply encoded and decoded into the
// caller's, exactly as the network path would, so caller and handler share
// no memory.
func (c *Client) copyCall(srv *Server, ctx context.Context, m *method, args, reply any) error {
	bp := buffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBody {
			buffers.Put(bp)
		}
	}()
	body, err := appendMarshal(c.opts.codec, (*bp)[:0], args)
	*bp = body[:0]
	if err != nil {
		return fmt.Errorf("dispatch: encoding arguments of %s: %w", m.name, err)
	}
	if err := c.checkSize(m.name, body); err != nil {
		return fmt.Errorf("dispatch: arguments of %s: %w", m.name, err)
	}
	cdc, e := srv.codecFor(c.opts.codec.Name())
	if e != nil {
		return e
	}
	a := m.newArgs()
	if e := decodeArgs(cdc, m, body, a); e != nil {
		return e
	}
	r := m.newReply()
	if e := srv.invoke(ctx, m, a, r); e != nil {
		return e
	}
	body, err = appendMarshal(cdc, body[:0], r)
	*bp = body[:0]
	if err != nil {
		return encodeError(m.name, err)
	}
	if err := c.checkSize(m.name, body); err != nil {
		return &Error{Code: CodeInternal, Message: "dispatch: reply of " + m.name + " is too large: " + err.Error()}
	}
	if err := c.opts.codec.Unmarshal(body, reply); err != nil {
		return decodeReplyError(m.name, err)
	}
	return nil
}

// checkSize applies the transport's frame limit to a body the copy mode
// encoded, as the network would. The headers a frame would carry are
// counted as a small allowance rather than exactly: near the limit, the
// network and the shortcut may differ by those few bytes.
func (c *Client) checkSize(name string, body []byte) error {
	const headerAllowance = 64
	if n := len(body) + len(name) + headerAllowance; n > c.limit {
		return fmt.Errorf("%w: about %d bytes, limit %d", transport.ErrFrameTooLarge, n, c.limit)
	}
	return nil
}
