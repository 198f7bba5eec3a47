package dispatch

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport/internal/sweep"
)

// replyHold is the write of queued replies that the goroutine reading a
// connection holds back while it runs, one after another, calls whose
// requests arrived together: their replies then go out in one write
// rather than one each. It serves BenchmarkParallel/zerodial-tcp, where
// the requests of 64 callers sharing one client arrive in batches, each
// call comes alone (runInline), and a write per reply was half of the
// server's time.
//
// The reader holds the write only when queueing its reply made it the
// socket queue's writer (transport.BatchSender's flush) and the next
// request has arrived whole, so that reading it cannot wait for the peer
// (heldReplies). It writes what it holds before it reads a request that
// has not arrived whole, and before it stops reading; the quiet sweep
// writes it for the reader once it has been held for sweep.QuietAfter
// (Sweep), so that a slow call holds up the replies queued before it by
// that much at most, as it holds up the reading. Exactly one of them takes
// each hold, and the one that takes it writes.
type replyHold struct {
	since atomic.Int64 // when the hold began (UnixNano); 0 when none is held
}

// hold records that the caller, the queue's writer, holds the write back.
func (h *replyHold) hold(now int64) { h.since.Store(max(now, 1)) }

// held reports whether a write is held back.
func (h *replyHold) held() bool { return h.since.Load() != 0 }

// take ends the hold; true for exactly one taker of each hold, which must
// then write.
func (h *replyHold) take() bool {
	s := h.since.Load()
	return s != 0 && h.since.CompareAndSwap(s, 0)
}

// takeStale is take for a hold that began QuietAfter or more before now.
func (h *replyHold) takeStale(now int64) bool {
	s := h.since.Load()
	return s != 0 && now-s >= int64(sweep.QuietAfter) && h.since.CompareAndSwap(s, 0)
}

// maxHeld bounds what the socket holds unwritten when the reader begins to
// hold a write, well below what makes a Queue wait for room (frame's
// maxQueued): its next replies must not wait for the write it holds.
const maxHeld = 64 << 10

// holdReply decides, for the reader whose reply just made it the queue's
// writer, whether to hold the write back: the next request has arrived
// whole, and little is queued.
func (c *serverConn) holdReply() bool {
	if c.more == nil || !c.more.Buffered() {
		return false
	}
	if c.unwritten != nil && c.unwritten.Unwritten() >= maxHeld {
		return false
	}
	if c.reader.holdWrite(time.Now().UnixNano()) {
		c.srv.quiet.Add(c)
	} else {
		c.srv.quiet.Hurry() // a hold is hurried (Hurried)
	}
	return true
}

// writeHeld writes the replies held back, if this goroutine takes the hold.
func (c *serverConn) writeHeld() {
	if c.reader.hold.take() {
		c.writeTaken()
	}
}

// writeTaken writes the queue, for whoever took the hold. A failed write
// closes the socket, and the reader then fails: nothing else to do here.
func (c *serverConn) writeTaken() {
	if w := c.watchdog; w != nil {
		w.Begin()
		defer w.End()
	}
	_ = c.batch.Flush(context.Background())
}

// heldWrite is the quiet sweep's task of writing a hold it took (Sweep).
type heldWrite serverConn

func (t *heldWrite) run() { (*serverConn)(t).writeTaken() }
