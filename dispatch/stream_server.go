package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
	"github.com/zerodial/transport/internal/rpcwire"
)

// serverStream is the handler's side of a stream that arrived over the
// network. Its context is its serverCall's.
type serverStream struct {
	call *serverCall
	in   *flow.Inbox  // what the caller sends; fed by the connection's reader
	out  *flow.Credit // the caller's window, for what the handler sends
	msg  transport.Message
	buf  []byte
	win  transport.Message // the consumer's window frames
	// wantsReady says the caller's open frame asked for the ready frame;
	// readyOnce sends it once, at the handler's Ready, and is spent
	// without sending by the handler's first message, which says as much,
	// and when the stream is answered, so that no ready frame follows the
	// end or a message.
	wantsReady bool
	readyOnce  sync.Once
	// overBudget is set when what waits in the inbox took the connection
	// past its byte budget: the end of the stream says so.
	overBudget atomic.Pointer[Error]
}

func newServerStream(call *serverCall, callerWindow int, wantsReady bool) *serverStream {
	st := &serverStream{call: call, out: flow.NewCredit(callerWindow, true), wantsReady: wantsReady,
		msg: transport.Message{Header: map[string]string{rpcwire.Seq: call.seqText, rpcwire.Stream: rpcwire.StreamMsg}},
		win: transport.Message{Header: map[string]string{rpcwire.Seq: call.seqText, rpcwire.Stream: rpcwire.StreamWindow}}}
	c := call.conn
	st.in = flow.NewInbox(c.srv.opts.streamWindow, st.grant)
	// What waits in the inbox is held by the server for the peer, as a
	// request's body is: it counts in the connection's byte budget
	// (WithMaxBytesPerConn), and a message that takes the connection past
	// it ends the stream (exhausted). A stream reserves nothing of the
	// budget when it opens — an idle stream holds nothing, and reserving
	// its window would bound a connection's streams to budget/window
	// however little they hold — so it is what streams buffer that the
	// budget bounds: many streams each holding a full window cannot take
	// the server past it by more than the one message that crossed it.
	// The measure is held's, a call's admission's: with what the socket
	// holds unwritten, so that the budget is one ceiling for both.
	st.in.Queued = func(d int) {
		c.bytes.Add(int64(d))
		if d > 0 && c.held() > c.srv.opts.maxConnBytes {
			st.exhausted()
		}
	}
	return st
}

// exhausted ends the stream because a message waiting in its inbox has
// taken the connection past its byte budget: what the inbox holds is
// dropped, the handler's context ends, and the end of the stream carries
// CodeResourceExhausted, as a call refused for the budget does. The peer
// keeps to its window, so the stream cannot be refused the message
// instead. A stream alone on its connection is spared, as a lone call is
// always admitted: its window and the frame limit bound it. From the
// connection's reader.
func (st *serverStream) exhausted() {
	c := st.call.conn
	c.mu.Lock()
	alone := c.inflight <= 1
	c.mu.Unlock()
	if alone || !st.overBudget.CompareAndSwap(nil, admissionRefusal("bytes", c.srv.opts.maxConnBytes)) {
		return
	}
	st.call.cancel(context.Canceled)
	st.in.Close()
}

func (st *serverStream) Check() error { return st.call.Err() }

func (st *serverStream) Wait(ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-st.call.Done():
		return st.call.Err()
	}
}

func (st *serverStream) codec() codec.Codec { return st.call.cdc }

func (st *serverStream) next() (flow.Item, error) { return st.in.Next(st) }

func (st *serverStream) done() { st.in.Done() }

func (st *serverStream) send(m any) error {
	if err := st.call.Err(); err != nil {
		return err
	}
	if st.wantsReady {
		// The message says the handler is ready; a Ready under way on
		// another goroutine goes out first.
		st.readyOnce.Do(noop)
	}
	body, err := encodeMsg(st.call.cdc, st.buf[:0], st.call.name, m)
	if err != nil {
		return err
	}
	st.buf = keep(body)
	if err := st.out.Acquire(len(body), st); err != nil {
		return err
	}
	c := st.call.conn
	st.msg.Body = body
	if c.async != nil {
		// Queued, and written with whatever else is queued; the window
		// bounds what the queue holds of this stream.
		err = c.async.SendAsync(&st.msg)
	} else {
		n := int64(len(body))
		c.bytes.Add(n)
		err = c.sendBounded(&st.msg, false)
		c.bytes.Add(-n)
	}
	st.msg.Body = nil
	if err != nil {
		st.out.Unacquire(len(body))
		if isFrameTooLarge(err) {
			return msgTooLarge(st.call.name, err)
		}
		// Part of a frame may be out: the connection is lost, and with it
		// the caller, so the context ends now rather than when the reader
		// notices.
		c.sock.Close()
		st.call.cancel(context.Canceled)
		return err
	}
	return nil
}

// ready tells the caller the handler is ready, once: the ready frame, to
// a caller that asked for it, unless a message has gone. From the
// handler's goroutines; a concurrent Send waits until the frame is out, so
// that it precedes the message.
func (st *serverStream) ready() {
	if st.wantsReady {
		st.readyOnce.Do(st.sendReady)
	}
}

func (st *serverStream) sendReady() {
	if st.call.Err() != nil {
		return // the stream is over: its end may be out already
	}
	m := transport.Message{Header: map[string]string{rpcwire.Seq: st.call.seqText, rpcwire.Stream: rpcwire.StreamReady}}
	if err := st.call.conn.sendBounded(&m, false); err != nil && !isFrameTooLarge(err) {
		st.call.conn.sock.Close()
	}
}

// grant returns n bytes of credit to the caller. Called by the consumer,
// so one at a time.
func (st *serverStream) grant(n int) {
	if st.call.Err() != nil {
		return // the stream is over: its end may be out already
	}
	st.win.Header[rpcwire.Window] = rpcwire.FormatWindow(n)
	if err := st.call.conn.sendBounded(&st.win, false); err != nil && !isFrameTooLarge(err) {
		st.call.conn.sock.Close()
	}
}

// serveStream runs a stream's handler, for serve, which sends the end of
// the stream: the stream counts as a call in flight until its end is
// written.
func (call *serverCall) serveStream() *Error {
	c, st := call.conn, call.stream
	// The server's window is the first frame it sends on the stream, so
	// that it precedes every grant (WIRE.md). To a caller that asked for
	// the ready frame it says one will come: the window says the stream
	// is taken, the ready frame that the handler is ready.
	st.win.Header[rpcwire.Window] = rpcwire.FormatWindow(c.srv.opts.streamWindow)
	if st.wantsReady {
		st.win.Header[rpcwire.Ready] = rpcwire.ReadyYes
	}
	if err := c.sendBounded(&st.win, false); err != nil {
		c.sock.Close()
	}
	delete(st.win.Header, rpcwire.Ready)
	return c.srv.invokeStream(call, call.meth, st)
}

// endHeader returns the header of the end of a stream: the handler's error
// e, if any, and the reply metadata md.
func endHeader(seqText string, md Metadata, e *Error) map[string]string {
	h := map[string]string{rpcwire.Seq: seqText, rpcwire.Stream: rpcwire.StreamEnd}
	if e != nil {
		h[rpcwire.Error] = e.Message
		if e.Code != CodeUnknown {
			h[rpcwire.ErrorCode] = string(e.Code)
		}
		setDetails(h, e)
	}
	addMetadata(h, md)
	return h
}

// endTooLarge is the error a stream's caller gets when the end of the
// stream, its reply metadata included, is over the server's frame limit:
// CodeInternal, as for a unary reply that is too large (replyTooLarge).
func endTooLarge(name string, err error) *Error {
	return &Error{Code: CodeInternal, Message: "dispatch: end of stream of " + name + " is too large: " + err.Error()}
}

// endStream sends the end of the stream of name: the handler's error e, if
// any, and the reply metadata md. An end over the frame limit, by its
// metadata or its error's message, goes without them, as CodeInternal, as
// a unary reply would: the caller learns why, rather than losing the
// connection.
func (c *serverConn) endStream(seqText, name string, md Metadata, e *Error) {
	err := c.sendBounded(&transport.Message{Header: endHeader(seqText, md, e)}, false)
	if err == nil {
		return
	}
	if isFrameTooLarge(err) {
		err = c.sendBounded(&transport.Message{Header: endHeader(seqText, nil, endTooLarge(name, err))}, false)
		if err == nil {
			return
		}
	}
	c.sock.Close()
}

// streamFrame hands a caller's frame of kind (msg, end, window) to the
// stream seq names. Frames of a stream that has ended are dropped: they
// crossed its end. It reports false, having logged why, for a protocol
// error, which closes the connection.
func (c *serverConn) streamFrame(seq uint64, kind string, m *transport.Message) bool {
	c.mu.Lock()
	call := c.calls[seq]
	c.mu.Unlock()
	if call == nil {
		return true
	}
	st := call.stream
	var err error
	switch {
	case st == nil:
		err = errors.New("a stream frame for a unary call")
	case kind == rpcwire.StreamMsg:
		body := append(st.in.Buffer(), m.Body...)
		err = st.in.Put(body)
	case kind == rpcwire.StreamEnd:
		st.in.Finish(nil)
	case kind == rpcwire.StreamWindow:
		var n int
		if n, err = rpcwire.ParseWindow(m.Header[rpcwire.Window]); err == nil {
			st.out.Grant(n)
		}
	default:
		err = fmt.Errorf("unknown Stream %q", kind)
	}
	if err != nil {
		c.srv.opts.logger.Warn("dispatch: closing connection: bad stream frame", "remote", c.sock.RemoteAddr(), "seq", seq, "err", err)
		return false
	}
	return true
}
