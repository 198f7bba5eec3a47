package frame

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxKeptQueue bounds the queue buffer a socket keeps between bursts.
const maxKeptQueue = 256 << 10

// maxQueued bounds what Send and Queue add to behind a write under way:
// past it, they wait for that write before copying their frame in, so that
// however many of them wait, they have put at most this and one frame in
// the queue (and as much again in the batch being written). Without it
// every waiting Send held a copy of its frame besides the frame itself (a
// non-reading tcp peer of a Server made it hold 512 copies of 64 KiB
// replies beyond what WithMaxBytesPerConn counts). SendAsync does not wait
// for room, so its frames are not bounded here: its callers bound them.
// dispatch queues only stream messages with it, each within the window
// the peer granted its stream (serverStream.send and clientStream.send
// acquire the credit before they queue, dispatch/stream_net.go), and a
// Server counts them in WithMaxBytesPerConn while queued (Unwritten).
const maxQueued = 256 << 10

// sendQueue coalesces writes (transport.AsyncSender): frames sent while a
// write is under way wait, encoded, in one buffer, and the writer that
// finishes takes the whole buffer in its next write. One writer at a time
// drains it: a Send that finds no writer writes its own frame at once,
// then what queued meanwhile; SendAsync starts a goroutine to drain. It
// serves BenchmarkStream (a stream of small messages made one write system
// call per message without it) and keeps Send and SendAsync in one order.
type sendQueue struct {
	mu    sync.Mutex
	cond  sync.Cond // signalled when a batch is written or the queue fails
	buf   []byte    // frames waiting
	spare []byte
	busy  bool   // a writer is draining; buf is non-empty only while busy
	batch uint64 // the number buf will be written as
	done  uint64 // batches written: batch n is out once done > n
	err   error  // set when a write failed and closed the socket
	// writer counts the claims, so that a Flush's interruption touches
	// only its own writing.
	writer uint64
	// interrupted is set when a Flush's context set a write deadline
	// (interruptAt, InterruptGrace ahead); it is cleared before the
	// queue has another writer.
	interrupted bool
	interruptAt time.Time
	// handOn writes what is queued on a goroutine of its own, as the
	// writer (drainHandingOn); made once, by the Socket.
	handOn func()
	// unwritten counts the bytes of the frames taken and not yet written
	// or dropped: those in buf and the batch being written (Unwritten).
	// Changed under mu; atomic, so that reading it takes no lock.
	unwritten atomic.Int64
}

func (q *sendQueue) init() { q.cond.L = &q.mu }

// claim makes the caller the writer if there is none, and reports whether
// it did; otherwise the caller's frame must be queued. q.mu is held.
func (q *sendQueue) claim() bool {
	if q.busy {
		return false
	}
	q.busy = true
	q.writer++
	return true
}

// room waits, q.mu held, until the queue may take another frame: no
// write is under way, or less than maxQueued waits behind it. It returns
// the queue's error if a write failed meanwhile.
func (q *sendQueue) room() error {
	for q.busy && len(q.buf) >= maxQueued && q.err == nil {
		q.cond.Wait()
	}
	return q.err
}

// waitBatch waits until batch n is written or the queue fails; q.mu is
// held.
func (q *sendQueue) waitBatch(n uint64) error {
	for q.done <= n && q.err == nil {
		q.cond.Wait()
	}
	if q.done > n {
		return nil
	}
	return q.err
}

// drain writes what is queued, batch after batch, with write, until the
// queue is empty, and then gives up being the writer. A write error ends
// the queue for good: write reports it only when it closed the socket.
// It returns the error of the first batch it wrote, or the queue's error.
// clear, when not nil, is called under q.mu before the writer gives up
// (Flush's interruption).
func (q *sendQueue) drain(write func([]byte) error) error {
	return q.drainThen(write, nil)
}

func (q *sendQueue) drainThen(write func([]byte) error, clear func()) (first error) {
	return q.drainHandingOn(write, clear, nil)
}

// drainHandingOn is drainThen that, once ctx has ended, after a batch is
// written and more waits, clears and hands the rest to a goroutine that
// writes it (q.handOn, which stays the writer), and returns. ctx may be
// nil: never.
func (q *sendQueue) drainHandingOn(write func([]byte) error, clear func(), ctx context.Context) (first error) {
	q.mu.Lock()
	first = q.err
	wrote := false
	for q.err == nil && len(q.buf) > 0 {
		buf, n := q.buf, q.batch
		q.buf, q.spare = q.spare[:0], nil
		q.batch++
		q.mu.Unlock()
		err := write(buf)
		q.mu.Lock()
		q.unwritten.Add(-int64(len(buf))) // written, or dropped with the socket
		if cap(buf) <= maxKeptQueue {
			q.spare = buf[:0]
		}
		if err != nil {
			if q.err == nil {
				q.err = err
			}
		} else {
			q.done = n + 1
		}
		if !wrote {
			first, wrote = err, true
		}
		q.cond.Broadcast()
		if err == nil && len(q.buf) > 0 && ctx != nil && ctx.Err() != nil {
			if clear != nil {
				clear()
			}
			q.writer++ // an interruption of this caller's touches it no more
			q.mu.Unlock()
			go q.handOn()
			return first
		}
	}
	if clear != nil {
		clear()
	}
	q.unwritten.Add(-int64(len(q.buf))) // dropped: a write failed
	q.buf = q.buf[:0]
	q.busy = false
	q.cond.Broadcast() // Queue may wait for the writer to go
	q.mu.Unlock()
	return first
}
