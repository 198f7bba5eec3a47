package frame

import (
	"sync"
)

// maxKeptQueue bounds the queue buffer a socket keeps between bursts.
const maxKeptQueue = 256 << 10

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
}

func (q *sendQueue) init() { q.cond.L = &q.mu }

// claim makes the caller the writer if there is none, and reports whether
// it did; otherwise the caller's frame must be queued. q.mu is held.
func (q *sendQueue) claim() bool {
	if q.busy {
		return false
	}
	q.busy = true
	return true
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
func (q *sendQueue) drain(write func([]byte) error) {
	q.mu.Lock()
	for q.err == nil && len(q.buf) > 0 {
		buf, n := q.buf, q.batch
		q.buf, q.spare = q.spare[:0], nil
		q.batch++
		q.mu.Unlock()
		err := write(buf)
		q.mu.Lock()
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
		q.cond.Broadcast()
	}
	q.buf = q.buf[:0]
	q.busy = false
	q.mu.Unlock()
}
