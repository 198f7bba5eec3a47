package dispatch

import (
	"sync/atomic"
	"time"

	"github.com/zerodial/transport/internal/sweep"
)

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
// much at most — by up to quietSlow plus QuietAfter for a call of a
// method known to be fast (inlinePace) that runs long after all, which the sweep then finds,
// and the method is not known to be fast after that.
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
	pace := &call.meth.pace
	urgent := !pace.known()
	if c.reader.beginInline(start, pace, urgent) {
		c.srv.quiet.Add(c)
	} else if urgent {
		c.srv.quiet.Hurry()
	}
	c.srv.serveIncoming(call, call.name)
	pace.ran(time.Now().UnixNano() - start)
	return c.reader.endInline(start)
}

// Hurried is the quiet sweep's question (sweep.Hurrier): whether it must
// look at c every QuietAfter, or may wait for quietSlow.
func (c *serverConn) Hurried() bool { return c.reader.hurried() }

// quietSlow is the Server's quiet sweep's period while no connection is
// hurried: while every call run inline is of a method known to be fast
// (inlinePace), and no write is held. A sweep that ticks every millisecond
// wakes a goroutine as often, and while calls flow between two processes
// on one host that wake costs more than the calls (BenchmarkUnary's
// zerodial-tcp-unix-proc row). The cost: a call of a method known to be
// fast that runs long after all, on a connection that has more to read,
// holds up what follows it by up to this (and QuietAfter) — until the
// sweep hands the reading on from it, and its method is not known to be
// fast after that, on any connection; calls of it that other connections
// began before then are held up as long.
const quietSlow = 100 * time.Millisecond

// inlinePace is what a method's calls run inline tell of it: how many
// ran shorter than fastRun, counted up to knownFastAfter (a few past it
// when calls end at once: known only asks for as many), since one ran for
// sweep.QuietAfter or longer. A method with knownFastAfter such calls is
// known to be fast, and its calls run inline are watched at the quiet
// sweep's slow pace; a call that runs as long as the sweep would have
// handed it on after makes it unknown again. A call in between changes
// nothing: on a busy machine a short call is sometimes held up for some
// hundreds of microseconds, and a method that lost what it knew at each
// would have the sweep tick every millisecond again for its next calls.
type inlinePace struct{ fastRuns atomic.Int32 }

const (
	// fastRun is how long a call may run and still count as fast: a
	// tenth of what has the sweep hand the reading on.
	fastRun = sweep.QuietAfter / 10
	// knownFastAfter is how many fast calls in a row make a method known
	// to be fast.
	knownFastAfter = 16
)

// known reports whether the method is known to be fast.
func (p *inlinePace) known() bool { return p.fastRuns.Load() >= knownFastAfter }

// ran records a call of the method that ran for d (nanoseconds). It
// writes only when what it knows changes, so that the calls of a method
// known to be fast share its cache line unwritten.
func (p *inlinePace) ran(d int64) {
	n := p.fastRuns.Load()
	switch {
	case d < int64(fastRun):
		if n < knownFastAfter {
			p.fastRuns.Add(1)
		}
	case d >= int64(sweep.QuietAfter):
		p.slow()
	}
}

// slow records a call of the method that has run sweep.QuietAfter, or
// longer: the method is not known to be fast.
func (p *inlinePace) slow() {
	if p.fastRuns.Load() != 0 {
		p.fastRuns.Store(0)
	}
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
