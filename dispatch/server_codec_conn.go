package dispatch

import (
	"io"
	"net/rpc"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/connwatch"
)

// ServeConn serves the calls of one net/rpc connection, read and answered
// through the codec newCodec makes over conn, as ServeCodec does — the same
// router, interceptor chain, panic rule, refusals, Shutdown, Close and
// CallInfo (its addresses are conn's when the codec has none, as over
// jsonrpc's codec) — and with the limits the zerodial wire applies to a
// connection, which ServeCodec, seeing only a codec, cannot:
//
//   - WithMaxBytesPerConn. The bytes the codec reads from conn for each
//     request, from the start of its header to the end of its body, are
//     counted; the count is approximate by at most the codec's read-ahead
//     buffer (bytes of the next request read ahead count for the one being
//     read). A request counts from when it is read until it is answered,
//     and a reply while it is being written to conn, as on the wire; a call
//     that would take the connection past the limit, unless it is the
//     connection's only call, is refused with CodeResourceExhausted's words
//     "dispatch: too many bytes in flight on this connection (limit N)",
//     and the connection goes on.
//   - The size of one request. The zerodial wire bounds one message by its
//     frame limit, transport.DefaultMaxFrameSize (4 MiB, which is gobrpc's
//     default too), or by WithMaxBytesPerConn if that is smaller; so does
//     ServeConn: no frame header announces a request's size, so once a
//     request has read that many bytes and wants more, the codec's next
//     read from conn fails with transport.ErrFrameTooLarge, and every later
//     one. When the request's header had been read whole and its body is
//     what is too large (gob's and msgpackrpc's codecs read the two apart;
//     jsonrpc's reads a request in one piece), its call is first answered
//     with the codec's failure, "dispatch: decoding arguments of M:
//     transport: frame too large: ..."; then the next header fails, the
//     reason is logged, and the connection ends. What the Server
//     holds of a request is so bounded, whatever the codec buffers (a JSON
//     decoder holds a whole string before decoding it). WithMaxBytesPerConn
//     is the smaller bound only when it is set below 4 MiB: one request can
//     then never use more than the connection may hold.
//   - WithIdleTimeout. A connection that has sent no whole request, and
//     had no reply written, for the idle timeout while none of its calls is
//     in flight — one stalled half way through a request included — is
//     closed, as on the wire. A call in flight, however long, keeps it; a
//     call is in flight only once its request has wholly arrived, header
//     and body, so a client that stops after a header, or trickles a body,
//     is closed too, whatever the codec.
//   - WithReplyTimeout. A response that cannot be written within the reply
//     timeout, with no other written meanwhile (a client that does not
//     read), closes the connection, as on the wire.
//
// Idle and stalled connections are closed by closing conn, whose read or
// write deadline is also set in the past first when it has
// SetReadDeadline or SetWriteDeadline (a net.Conn has both), so that a
// Read or Write waiting on it ends even if its Close does not end them.
//
// Prefer ServeConn to ServeCodec whenever you have the connection: without
// these bounds one JSON-RPC client can make the Server allocate as much as
// it sends for one string, one gob client with slow handlers can make it
// hold WithMaxCallsPerConn calls of 4 MiB of arguments each, and a client
// that stalls or never reads holds its connection until it hangs up.
func (s *Server) ServeConn(conn io.ReadWriteCloser, newCodec func(io.ReadWriteCloser) rpc.ServerCodec) {
	lc := &limitedConn{conn: conn}
	lc.meter = requestMeter{r: conn, limit: min(s.opts.maxConnBytes, transport.DefaultMaxFrameSize)}
	s.serveCodec(newCodec(lc), lc)
}

// limitedConn is the connection ServeConn hands to the codec: it meters the
// requests the codec reads and counts the replies it writes, for the
// connection's byte budget, and holds the watchers of its idle time and of
// its replies. Its methods other than Read, Write and Close are
// codecConn's hooks, and do nothing on a nil limitedConn (ServeCodec's).
type limitedConn struct {
	conn  io.ReadWriteCloser
	meter requestMeter // the codec's reads go through it

	// bytes is what the connection makes the Server hold: the requests of
	// its calls in flight and the reply being written (serverConn's
	// bytes).
	bytes atomic.Int64

	idle     *connwatch.Idle     // nil when WithIdleTimeout is off
	watchdog *connwatch.Watchdog // nil when WithReplyTimeout is off
}

// Read reads for the codec, through the meter.
func (lc *limitedConn) Read(p []byte) (int, error) { return lc.meter.Read(p) }

// Write writes for the codec; what it writes counts in the connection's
// bytes while it is being written.
func (lc *limitedConn) Write(p []byte) (int, error) {
	n := int64(len(p))
	lc.bytes.Add(n)
	defer lc.bytes.Add(-n)
	return lc.conn.Write(p)
}

// Close closes conn.
func (lc *limitedConn) Close() error { return lc.conn.Close() }

// rwc returns conn, or nil.
func (lc *limitedConn) rwc() io.ReadWriteCloser {
	if lc == nil {
		return nil
	}
	return lc.conn
}

// watch starts the watchers of c, served over lc.
func (lc *limitedConn) watch(c *codecConn) {
	if lc == nil {
		return
	}
	o := &c.srv.opts
	if d := o.idleTimeout; d > 0 {
		lc.idle = connwatch.NewIdle(d, c.busy, func() {}, func() {
			o.logger.Debug("dispatch: closing idle connection", "remote", c.remote, "idle", d)
			lc.interrupt()
			c.close()
		})
	}
	if d := o.replyTimeout; d > 0 {
		lc.watchdog = connwatch.NewWatchdog(d, func() {
			o.logger.Warn("dispatch: closing connection: a reply could not be written in time; the peer is not reading",
				"remote", c.remote, "timeout", d)
			lc.interrupt()
			c.close()
		})
	}
}

// stop stops the watchers of a connection that is finished.
func (lc *limitedConn) stop() {
	if lc == nil {
		return
	}
	if lc.idle != nil {
		lc.idle.Stop()
	}
	if lc.watchdog != nil {
		lc.watchdog.Stop()
	}
}

// interrupt sets conn's deadlines in the past, when it has them, before it
// is closed: a Read or a Write waiting on a conn whose Close does not end
// them ends then.
func (lc *limitedConn) interrupt() {
	if d, ok := lc.conn.(interface{ SetReadDeadline(time.Time) error }); ok {
		_ = d.SetReadDeadline(longAgo)
	}
	if d, ok := lc.conn.(interface{ SetWriteDeadline(time.Time) error }); ok {
		_ = d.SetWriteDeadline(longAgo)
	}
}

// begin is told that the codec starts reading a request.
func (lc *limitedConn) begin() {
	if lc != nil {
		lc.meter.begin()
	}
}

// read is told that the codec has read a whole request: the connection is
// not idle.
func (lc *limitedConn) read() {
	if lc != nil && lc.idle != nil {
		lc.idle.Touch()
	}
}

// tooLarge returns the error that ended the connection's reading if a
// request passed the limit of one request.
func (lc *limitedConn) tooLarge() error {
	if lc == nil {
		return nil
	}
	return lc.meter.tooLarge()
}

// admit charges the request of call, just read, to the connection's bytes,
// or refuses it as the wire does: past WithMaxBytesPerConn, unless call is
// the only one in flight (the limit of one request bounds that one).
func (lc *limitedConn) admit(c *codecConn, call *codecCall) *Error {
	if lc == nil {
		return nil
	}
	size := lc.meter.count()
	c.mu.Lock()
	alone := len(c.calls) == 1 // call itself
	c.mu.Unlock()
	if limit := c.srv.opts.maxConnBytes; !alone && lc.bytes.Load()+size > limit {
		return admissionRefusal("bytes", limit)
	}
	call.size = size
	lc.bytes.Add(size)
	return nil
}

// release lets go of the size of a request that is answered, or will never
// be.
func (lc *limitedConn) release(size int64) {
	if lc != nil {
		lc.bytes.Add(-size)
	}
}

// replyBegin and replyEnd are told that a response is being written, and
// that it is written or failed: the reply timeout watches it, and once it
// is out the connection is not idle.
func (lc *limitedConn) replyBegin() {
	if lc != nil && lc.watchdog != nil {
		lc.watchdog.Begin()
	}
}

func (lc *limitedConn) replyEnd() {
	if lc == nil {
		return
	}
	if lc.watchdog != nil {
		lc.watchdog.End()
	}
	if lc.idle != nil {
		lc.idle.Touch()
	}
}

// busy reports whether calls are in flight: a connection waiting for its
// handlers is not idle, however long they take (serverConn's busy).
func (c *codecConn) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls) > 0
}
