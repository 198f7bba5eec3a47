package dispatch

import (
	"context"
	"reflect"
	"sync"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
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

// shortcutStream opens a stream on e's Server, a Server of this process. It
// reports handled false when the Server has stopped, so that the stream
// goes to the transport, as a call would. ready is what the network's open
// frame would ask (openStream), for the frame-limit checks alone: the
// handler's readiness is always told on the shortcut, where it costs no
// frame.
func (c *Client) shortcutStream(ctx context.Context, e *entry, name string, in, out reflect.Type, ready bool) (callerEnd, bool, error) {
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
	if tooLarge, lost := c.openCheck(ctx, e, name, ready); tooLarge != nil || lost != nil {
		srv.gate.leave()
		if lost != nil {
			// The Server drops the connection: no end arrives.
			return failedEnd{err: lost, name: name, path: c.expectedPath(name, in, out)}, true, nil
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
	if e == nil {
		e = shapeError(m, true)
	}
	if e != nil {
		return nil, false, nil, e
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
	callerWait
	ent         *entry
	m           *method
	hctx        *shortcutCtx // the handler's
	cdc         codec.Codec  // the Server's, for the caller's messages and the handler's
	serverLimit int

	up     *flow.Inbox  // caller → handler
	upCr   *flow.Credit // copy mode
	down   *flow.Inbox  // handler → caller
	downCr *flow.Credit // copy mode

	// The small fields together, so that the struct keeps the allocation
	// size class it had before readiness (CallStream's fast path makes
	// one per stream).
	direct     bool
	halfClosed bool
	over       bool // the handler has returned; under mu
	gaveUp     bool // the caller stopped before the end: no capture; under mu

	// readied is what Established waits for (under mu): the handler is
	// ready (Ready, its first Send), or the stream ended first.
	readied readiness

	mu     sync.Mutex
	result error
	lost   error // set by fail: the stream's end, whatever the handler returns
}

func newMemStream(ctx context.Context, c *Client, e *entry, m *method, direct bool, cdc codec.Codec) *memStream {
	s := newFastStream(ctx, c, e, m, direct, cdc)
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
		ready := s.readied.settleLocked(endedFirst) // a handler that returned before it was ready
		s.mu.Unlock()
		closeWait(ready)
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

func (s *memStream) giveUp() {
	s.mu.Lock()
	s.gaveUp = true
	s.mu.Unlock()
}

func (s *memStream) codec() codec.Codec { return s.c.opts.codec }

// path is the Path the stream took.
func (s *memStream) path() Path {
	if s.direct {
		return PathShortcutDirect
	}
	return PathShortcutCopy
}

func (s *memStream) named(err error) error { return callError(s.ctx, s.m.name, s.path(), err) }

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
	s.closed.Set(ErrStreamDone)
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
	ready := s.readied.settleLocked(endedFirst)
	s.mu.Unlock()
	closeWait(ready)
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

// ready needs no ordering with the messages: the caller's Established
// watches readied alone, and a handler's return settles it too, after
// which a Ready changes nothing. After the first, one atomic load.
func (h *memHandler) ready() { h.readied.settle(&h.mu, isReady) }

// established waits until the handler is ready, or returns why not: the
// stream's end when it came first (nil if the handler returned without
// error), or the caller's reason to stop waiting.
func (s *memStream) established() error {
	state, err := s.readied.await(&s.mu, s)
	if err != nil || state == isReady {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost != nil {
		return s.lost // fail, before the handler's end
	}
	return s.result
}

func (h *memHandler) send(m any) error {
	if err := h.hctx.Err(); err != nil {
		return err
	}
	h.ready()
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
