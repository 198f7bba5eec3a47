package dispatch

import "time"

// lone reports whether the call just started is the connection's only
// one in flight: it may then run on the goroutine that read it.
//
// A server whose reader hands the reading on before each call (serverConn
// run's leader and follower) wakes a second goroutine per call, and on more
// than one core that wake costs more than the call (BenchmarkUnary's network
// rows; floor-tcp-relay in bench/). A call that comes alone runs where it
// was read, and the reader reads on when it returns: nothing else is
// waiting to be read, unless a request arrives meanwhile — and for that,
// once the call has run for sweep.QuietAfter, the quiet sweep hands the
// reading to another worker, so a slow call holds a second one up by that
// much at most.
func (c *serverConn) lone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight == 1
}

// runInline runs call on the reading goroutine; false when the reading
// was handed on meanwhile, and this goroutine must not read again.
func (c *serverConn) runInline(call *serverCall) bool {
	start := time.Now().UnixNano()
	call.inline = true
	if c.reader.beginInline(start) {
		c.srv.quiet.Add(c)
	}
	c.srv.serveIncoming(call, call.name)
	return c.reader.endInline(start)
}

// Sweep is the quiet sweep's visit (internal/sweep): it hands the
// reading on when the inline call has run for sweep.QuietAfter, and has
// the replies the reader holds back written when it has held them that
// long (replyHold); it reports whether the sweep is done with c.
func (c *serverConn) Sweep(now int64) bool {
	write, handOn, done := c.reader.visit(now)
	if write {
		c.srv.work((*heldWrite)(c))
	}
	if handOn {
		c.srv.work(c)
	}
	return done
}
