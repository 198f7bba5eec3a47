package dispatch

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/connwatch"
	"github.com/zerodial/transport/internal/flow"
	"github.com/zerodial/transport/internal/rpcwire"
	"github.com/zerodial/transport/internal/signal"
)

// serverConn serves the calls arriving on one socket.
//
// Reading is a task that passes between worker goroutines (leader and
// followers): the worker reading the socket decodes a request, hands the
// reading on to another worker, and runs the call itself. The call then
// starts without waiting for a goroutine to wake, and the hand-off happens
// while it runs; a slow handler still holds up nobody.
type serverConn struct {
	srv  *Server
	sock transport.Socket
	wire transport.Wire // what the listener it came from speaks; zero for ServeSocket's
	info atomic.Pointer[connInfo]
	msg  transport.Message // the reader's; one reader at a time
	done signal.Signal     // set when the connection is finished

	mu    sync.Mutex
	calls map[uint64]*serverCall // calls whose handler runs, for Cancel messages
	// inflight counts the calls admitted and not yet answered: a call
	// counts until its reply is written, so that a peer that does not read
	// its replies cannot make the server hold more than the limit of them.
	inflight int
	// bytes counts the request bodies of the calls in flight and the
	// replies being written: what a peer makes the server hold, which
	// WithMaxBytesPerConn bounds, with what the socket holds unwritten
	// (held). Atomic, so that replies need no lock.
	bytes atomic.Int64
	// unwritten is sock's, when it can say how much it holds unwritten
	// (frame.Socket's Unwritten): the copies of replies queued behind a
	// write that has not finished, whose senders have let go of them.
	unwritten interface{ Unwritten() int64 }
	// written is sock's WaitWritten, when it has one (frame.Socket's):
	// a graceful Shutdown waits for it before closing the connection,
	// since closing drops the frames still queued — a stream's end queued
	// behind a write under way, say (flushed).
	written interface {
		WaitWritten(ctx context.Context) error
	}

	// watchdog closes the connection when its replies stop going out
	// (WithReplyTimeout); nil when the timeout is off.
	watchdog *connwatch.Watchdog

	// idle drops the connection once it has been idle for the idle
	// timeout (WithIdleTimeout); nil when the timeout is off.
	idle *connwatch.Idle
	// bigBody says the reader's message holds a body buffer past flow.KeptBody;
	// shedding asks the reader to drop it (quiet).
	bigBody, shedding atomic.Bool

	// async is sock's SendAsync, when it has one: a stream handler's
	// messages go through it, so that they are written in batches
	// (BenchmarkStream).
	async transport.AsyncSender
	// batch is sock's BatchSender, when it has one: replies go through it
	// (sendBounded).
	batch transport.BatchSender

	// drainAcked is set when the peer acknowledges the Drain notice: it
	// will send no new call, so closing the connection loses none.
	drainAcked signal.Signal

	// reader is what the reading goroutine shares with the quiet sweep:
	// the call it runs inline (runInline), the replies it holds back
	// (holdReply), and whether the sweep watches the connection.
	reader readerState
	// inlineOK is set when sock is a transport.FrameWaiter, the transports
	// a call that comes alone is faster on the reading goroutine over.
	inlineOK bool
	// more is sock's Buffered, when it has one (frame.Socket's): whether
	// the next request has arrived whole.
	more interface{ Buffered() bool }
}

// drain sends the Drain notice (WIRE.md) on a goroutine of its own, for a
// Send may wait for a slow peer, and waits there for the peer's
// acknowledgement, at most DrainAckTimeout (servedConn).
func (c *serverConn) drain() <-chan struct{} {
	ack := make(chan struct{})
	go func() {
		defer close(ack)
		if !c.notifyDrain() {
			return
		}
		t := time.NewTimer(DrainAckTimeout)
		defer t.Stop()
		select {
		case <-c.drainAcked.Signal():
		case <-c.done.Signal():
		case <-t.C:
		}
	}()
	return ack
}

// close closes the connection's socket: the reader fails and tears the
// connection down (servedConn).
func (c *serverConn) close() { c.sock.Close() }

// notifyDrain tells the peer that the Server is shutting down (WIRE.md,
// Drain); false if the notice could not be sent.
func (c *serverConn) notifyDrain() bool {
	return c.sendBounded(&transport.Message{Header: map[string]string{rpcwire.Drain: ""}}, false) == nil
}

// flushed waits until the frames the connection has queued on its socket
// are written, before a graceful Shutdown closes it: an answer queued
// behind a write under way (sendBounded's Queue, a stream's SendAsync)
// has left its call, and the gate, before it is out. The reply timeout
// bounds the wait, as it bounds a reply's Send: a peer that stops reading
// has the connection closed. It returns ctx's error if ctx ends first.
func (c *serverConn) flushed(ctx context.Context) error {
	if c.written == nil {
		return nil // the socket's Send has written what it took
	}
	if w := c.watchdog; w != nil {
		w.Begin()
		defer w.End()
	}
	if err := c.written.WaitWritten(ctx); ctx.Err() != nil {
		return err
	}
	return nil // a failed write has closed the connection: nothing to wait for
}

// ackDrained records the peer's acknowledgement of the Drain notice.
func (c *serverConn) ackDrained() { c.drainAcked.Set(nil) }

// connInfo returns what the connection's calls share of their CallInfo,
// found on first use.
func (c *serverConn) connInfo() *connInfo {
	if ci := c.info.Load(); ci != nil {
		return ci
	}
	c.info.CompareAndSwap(nil, newConnInfo(c.srv, c.sock, c.wire))
	return c.info.Load()
}

// busy reports whether calls are in flight: a connection waiting for its
// handlers is not idle, however long they take.
func (c *serverConn) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight > 0
}

// quiet is told when the connection has been idle for an eighth of the
// idle timeout. A reader holding a large body buffer (kept while large
// messages come one after another) is made to drop it: a read deadline in
// the past ends its Recv, which leaves the socket usable when no part of a
// message has arrived (the Socket contract), and the reader, seeing
// shedding, drops the buffer and reads on.
func (c *serverConn) quiet() {
	if c.bigBody.Load() && c.shedding.CompareAndSwap(false, true) {
		_ = c.sock.SetReadDeadline(longAgo)
	}
}

// expireIdle closes a connection that has been idle for the idle timeout.
func (c *serverConn) expireIdle() {
	c.srv.opts.logger.Debug("dispatch: closing idle connection", "remote", c.sock.RemoteAddr(), "idle", c.srv.opts.idleTimeout)
	c.sock.Close()
}

// run reads requests until one starts a call, which it then runs after
// handing the reading on; or until the socket fails.
func (c *serverConn) run() {
	m := &c.msg
	for {
		if c.reader.hold.held() && !c.more.Buffered() {
			c.writeHeld() // the peer's next request has not arrived
		}
		if err := c.sock.Recv(m); err != nil {
			if c.shedding.Load() && errors.Is(err, transport.ErrTimeout) {
				// quiet asked for the large buffer back.
				m.Body = nil
				c.bigBody.Store(false)
				_ = c.sock.SetReadDeadline(time.Time{})
				c.shedding.Store(false)
				continue
			}
			c.teardown()
			return
		}
		if cap(m.Body) > flow.KeptBody {
			c.bigBody.Store(true)
		}
		if c.idle != nil {
			c.idle.Touch()
		}
		rh := readHeader(m.Header)
		if rh.has(rpcwire.Drain) {
			c.ackDrained()
			shed(m)
			continue
		}
		seqText := rh.seq
		seq, err := rh.parseSeq()
		if err != nil {
			// Without a sequence number no reply can be matched: the
			// peer does not speak this protocol.
			c.srv.opts.logger.Warn("dispatch: closing connection: request without a valid Seq", "remote", c.sock.RemoteAddr(), "seq", seqText)
			c.teardown()
			return
		}
		if rh.has(rpcwire.Cancel) {
			c.cancel(seq)
			continue
		}
		open := false
		if kind, ok := rh.get(rpcwire.Stream); ok {
			if open = kind == rpcwire.StreamOpen; !open {
				// A frame of a stream in flight: hand it to the stream,
				// which never makes the reader wait.
				ok := c.streamFrame(seq, kind, m)
				shed(m)
				if !ok {
					c.teardown()
					return
				}
				continue
			}
		}
		call := c.start(m, &rh, seq, open)
		shed(m)
		if call != nil {
			if !open && c.inlineOK && c.lone() {
				if c.runInline(call) {
					continue
				}
				c.writeHeld()
				return // the reading was handed on meanwhile
			}
			c.srv.work(c)
			c.writeHeld()
			c.srv.serveIncoming(call, call.name)
			return
		}
	}
}

// teardown ends the connection: calls in flight lose their caller, so their
// contexts end.
func (c *serverConn) teardown() {
	c.cancelAll()
	c.sock.Close()
	c.writeHeld() // fails at once, and lets the socket's queue go
	if c.watchdog != nil {
		c.watchdog.Stop()
	}
	if c.idle != nil {
		c.idle.Stop()
	}
	c.srv.untrack(c)
	c.srv.quiet.Remove(c)
	c.done.Set(nil)
}

// start prepares one call, or one stream when open is set, and returns it,
// or answers it at once with an error and returns nil. Arguments are
// decoded here, since the next Recv reuses the message; rh holds its
// headers.
func (c *serverConn) start(m *transport.Message, rh *receivedHeader, seq uint64, open bool) *serverCall {
	seqText, name := rh.seq, rh.name
	if !c.srv.gate.enter() {
		c.refuse(open, seqText, name, errShuttingDown)
		return nil
	}
	meth, e := c.srv.route(name, open)
	var cdc codec.Codec
	if e == nil {
		ctype, _ := rh.get(rpcwire.ContentType)
		cdc, e = c.srv.codecFor(ctype)
	}
	var args, reply any
	if e == nil && !open {
		args, reply = meth.newPair()
		e = decodeArgs(cdc, c.srv.opts.strict, meth, m.Body, args)
	}
	window := DefaultStreamWindow // the caller's, for what the handler sends
	if t, ok := rh.get(rpcwire.Window); ok && e == nil && open {
		var err error
		if window, err = rpcwire.ParseWindow(t); err != nil {
			e = &Error{Code: CodeInvalidArgument, Message: "dispatch: ill-formed Window " + strconv.Quote(t)}
		}
	}
	if e != nil {
		c.refuse(open, seqText, name, e)
		c.srv.gate.leave()
		return nil
	}

	d, timeout, e := rh.desc(c.connInfo())
	if e != nil {
		c.refuse(open, seqText, name, e)
		c.srv.gate.leave()
		return nil
	}
	call := &serverCall{callCtx: callCtx{callDesc: d}, conn: c, meth: meth, args: args, reply: reply, cdc: cdc, seq: seq, seqText: seqText}
	if !d.deadline.IsZero() {
		call.setDeadline(timeout)
	}
	if open {
		call.stream = newServerStream(call, window, rh.has(rpcwire.Ready))
	}

	c.mu.Lock()
	var refuse *Error
	if _, dup := c.calls[seq]; dup {
		refuse = &Error{Code: CodeInvalidArgument, Message: "dispatch: duplicate Seq " + seqText + " in flight"}
	} else if c.inflight >= c.srv.opts.maxConnCalls {
		refuse = admissionRefusal("calls", int64(c.srv.opts.maxConnCalls))
	} else if size := int64(len(m.Body)); c.inflight > 0 && c.held()+size > c.srv.opts.maxConnBytes {
		// One call is always admitted, however large: the frame limit
		// bounds it.
		refuse = admissionRefusal("bytes", c.srv.opts.maxConnBytes)
	}
	if refuse != nil {
		c.mu.Unlock()
		call.cancel(context.Canceled)
		c.refuse(open, seqText, name, refuse)
		c.srv.gate.leave()
		return nil
	}
	c.calls[seq] = call
	c.inflight++
	call.size = int64(len(m.Body))
	c.bytes.Add(call.size)
	c.mu.Unlock()

	return call
}

// held is what the connection holds for its peer, WithMaxBytesPerConn's
// measure: the requests of the calls in flight, their replies until they
// are written or dropped (while a reply waits in the socket's queue, its
// copy there), and what waits in stream inboxes.
func (c *serverConn) held() int64 {
	n := c.bytes.Load()
	if c.unwritten != nil {
		n += c.unwritten.Unwritten()
	}
	return n
}

// refuse answers a call, or the opening of a stream, with e at once.
func (c *serverConn) refuse(open bool, seqText, name string, e *Error) {
	if open {
		c.endStream(seqText, name, nil, e)
		return
	}
	c.reply(seqText, name, nil, nil, nil, e, false)
}

func (c *serverConn) cancel(seq uint64) {
	c.mu.Lock()
	call := c.calls[seq]
	c.mu.Unlock()
	if call != nil {
		call.cancel(context.Canceled)
	}
}

// cancelAll ends the contexts of every call in flight: their caller can no
// longer receive a reply.
func (c *serverConn) cancelAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.calls {
		call.cancel(context.Canceled)
	}
}
