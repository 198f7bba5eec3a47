package mux

import "sync"

// joinBuffers lends the buffers in which a stream joins a frame's head and
// large body, so that they go to yamux as one write: one yamux frame, where
// two writes made two (frame.JoinedWriter). It serves bench's
// BenchmarkUnary/zerodial-mux/1MiB: a head sent apart cost a yamux frame of
// its own, and left the peer's receive buffer, allocated to fit the first
// frame that arrives, sized for the head, so that the body's arrival grew it
// a dozen times over (some 75 allocations and as many megabytes copied per
// 1 MiB echo). Joined, the body is copied once more here, into a buffer
// shared by every stream of the process (a sync.Pool, emptied by the
// garbage collector), and the peer allocates its buffer once, to fit.
type joinBuffers struct {
	pool sync.Pool // of *[]byte
}

// maxPooledJoin is the largest buffer joinBuffers keeps for reuse: twice
// the default frame limit. A larger frame's buffer is left to the garbage
// collector.
const maxPooledJoin = 8 << 20

// join returns a buffer holding head then body, and a release to call once
// the buffer is no longer used.
func (j *joinBuffers) join(head, body []byte) (buf []byte, release func()) {
	n := len(head) + len(body)
	p, _ := j.pool.Get().(*[]byte)
	if p == nil || cap(*p) < n {
		if p != nil {
			j.pool.Put(p) // a smaller frame's may still serve one
		}
		b := make([]byte, 0, n)
		p = &b
	}
	buf = append(append((*p)[:0], head...), body...)
	return buf, func() {
		if cap(*p) <= maxPooledJoin {
			*p = (*p)[:0]
			j.pool.Put(p)
		}
	}
}

// joins is the process's joinBuffers.
var joins joinBuffers

// WriteJoined writes head and body as one Write (frame.JoinedWriter).
func (c *streamConn) WriteJoined(head, body []byte) (int, error) {
	buf, release := joins.join(head, body)
	defer release()
	return c.Write(buf)
}
