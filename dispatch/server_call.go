package dispatch

import (
	"context"
	"time"

	"github.com/zerodial/transport/codec"
)

// serverCall is a call that arrived over the network, and the handler's
// context for it. One allocation serves both: a context built from
// context.WithCancel and a wrapper for its values would cost three, and the
// allocation budget of a call is small. It behaves as a context derived from
// context.Background with the caller's deadline, cancelled by a Cancel
// message, when the reply is sent, or when the connection ends, whose only
// values are the caller's metadata — the same as the handler's context on
// the shortcut (shortcutCtx).
type serverCall struct {
	callCtx

	conn    *serverConn
	meth    *method
	args    any
	reply   any
	cdc     codec.Codec
	seq     uint64
	seqText string
	size    int64 // the request's body, counted in the connection's bytes
	// stream is the handler's side of a stream; nil for a unary call.
	stream *serverStream
	// inline says the call runs on the goroutine that read it, which
	// reads on once it is answered (runInline).
	inline bool

	timer *time.Timer
}

// setDeadline starts the timer that ends the call at its deadline, d from
// when its request was read (receivedHeader.desc).
func (c *serverCall) setDeadline(d time.Duration) {
	if d <= 0 {
		c.cancel(context.DeadlineExceeded)
		return
	}
	// The timer's callback reads hook and, through ended, timer: both are
	// set under mu, which the callback takes first, so that a call which
	// outlives its deadline without ever looking at its context is no race.
	c.mu.Lock()
	c.hook = c
	c.timer = time.AfterFunc(d, func() { c.cancel(context.DeadlineExceeded) })
	c.mu.Unlock()
}

// ended stops the deadline's timer.
func (c *serverCall) ended() { c.timer.Stop() }

func (c *serverCall) String() string { return "dispatch.serverCall" }

// handle runs the call's handler, or the stream's, under the panic rule.
func (call *serverCall) handle() *Error {
	if call.stream != nil {
		return call.serveStream()
	}
	return call.conn.srv.invoke(call, call.meth, call.args, call.reply)
}

// answer sends the answer to the call: its reply, or e; for a stream, the
// end of the stream with e. The Seq is free again before the answer goes
// out: a client may reuse it as soon as it has the answer, and frames for
// it that arrive later are dropped. The call counts as in flight until its
// answer is written.
func (call *serverCall) answer(e *Error) {
	c, st := call.conn, call.stream
	if st != nil {
		if over := st.overBudget.Load(); over != nil {
			e = over // the handler's error is the consequence
		}
	}
	c.mu.Lock()
	delete(c.calls, call.seq)
	c.mu.Unlock()
	call.cancel(context.Canceled)
	if st != nil {
		st.readyOnce.Do(noop) // no ready frame after the end
		st.in.Done()
		st.in.Close()
		// An open frame has no body (WIRE.md) but may carry one, which
		// nothing reads: it is let go before the end goes out, so that a
		// peer told the stream ended finds the connection's count without it.
		c.bytes.Add(-call.size)
		c.endStream(call.seqText, call.name, call.sealReply(), e)
	} else {
		c.reply(call.seqText, call.name, call.cdc, call.reply, call.sealReply(), e, call.inline)
		c.bytes.Add(-call.size)
	}
	c.mu.Lock()
	c.inflight--
	if c.idle != nil {
		c.idle.Touch() // an answer written: the connection is in use
	}
	c.mu.Unlock()
}
