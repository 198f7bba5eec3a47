package frame

import (
	"io"
	"sync"
)

// smallRead is the buffer a socket reads into while its peer is quiet:
// an idle connection holds this much, not a full read buffer. It holds a
// small call's whole frame (prefix, headers with a trace context, and a
// body of some dozens of bytes); a larger frame takes a full buffer from
// the pool while it is read.
const smallRead = 256

// shrinkBelow is the read, in bytes, short enough to say that the peer
// has gone quiet.
const shrinkBelow = 2048

// bigReads are the read buffers of sockets whose peers are sending: taken
// when a read fills the small buffer, given back when a read finds the
// socket drained.
var bigReads = sync.Pool{New: func() any { b := make([]byte, readBufferSize); return &b }}

// readBuf is a buffered reader, as bufio.Reader is, whose buffer follows
// the traffic: while the peer is quiet it reads into a small array of its
// own, so that an idle connection does not hold a full read buffer (16
// KiB at each end: most of an idle tcp connection's heap in
// BenchmarkIdle); when a read fills that array, it takes a full buffer
// from a pool, so that a burst of small frames is read a buffer at a
// time; when a read returns little (shrinkBelow) — the socket has been
// drained, and the peer is sending little — and what is left unread fits
// the small array, the buffer goes back to the pool. Not safe for concurrent use.
type readBuf struct {
	src   io.Reader
	small [smallRead]byte
	big   *[]byte // from bigReads, while the peer is sending
	buf   []byte  // small[:] or *big
	r, w  int     // buf[r:w] is read and not yet taken
	err   error   // the read error not yet returned
	empty int     // reads in a row that returned nothing and no error
}

func newReadBuf(src io.Reader) *readBuf {
	b := &readBuf{src: src}
	b.buf = b.small[:]
	return b
}

// Buffered returns how many bytes can be taken without reading.
func (b *readBuf) Buffered() int { return b.w - b.r }

// fill reads once into the buffer's free space, after moving what is
// unread to its start; it switches buffers as the traffic says.
func (b *readBuf) fill() {
	if b.r > 0 {
		copy(b.buf, b.buf[b.r:b.w])
		b.w -= b.r
		b.r = 0
	}
	if b.big == nil && b.w == len(b.buf) {
		b.grow() // a frame prefix or more than the small array holds
	}
	n, err := b.src.Read(b.buf[b.w:])
	if n < 0 {
		n, err = 0, io.ErrNoProgress
	}
	if n == 0 && err == nil {
		// A reader that returns nothing for ever must not spin the
		// caller for ever (bufio's rule).
		if b.empty++; b.empty >= 100 {
			err = io.ErrNoProgress
		}
	} else {
		b.empty = 0
	}
	b.w += n
	b.err = err
	switch {
	case b.big == nil && b.w == len(b.buf):
		b.grow() // the peer is sending more than the small array takes
	case b.big != nil && b.w-b.r <= smallRead && n < shrinkBelow:
		// A short read: the socket is drained, and the peer sending
		// little. Back to the small array. (A stream's reader that keeps
		// up with its writer reads a few KiB at a time, and keeps the
		// full buffer: BenchmarkStream.)
		b.shrink()
	}
}

// grow moves to a full buffer from the pool.
func (b *readBuf) grow() {
	big := bigReads.Get().(*[]byte)
	n := copy(*big, b.buf[b.r:b.w])
	b.big, b.buf, b.r, b.w = big, *big, 0, n
}

// shrink moves what is unread back to the small array and gives the full
// buffer back.
func (b *readBuf) shrink() {
	n := copy(b.small[:], b.buf[b.r:b.w])
	bigReads.Put(b.big)
	b.big, b.buf, b.r, b.w = nil, b.small[:], 0, n
}

// readErr returns and clears the pending read error.
func (b *readBuf) readErr() error {
	err := b.err
	b.err = nil
	return err
}

// Peek returns the next n bytes without taking them, reading until they
// are there or a read fails; n must not exceed smallRead.
func (b *readBuf) Peek(n int) ([]byte, error) {
	for b.w-b.r < n && b.err == nil {
		b.fill()
	}
	if b.w-b.r < n {
		return b.buf[b.r:b.w], b.readErr()
	}
	return b.buf[b.r : b.r+n], nil
}

// Read takes up to len(p) bytes: from the buffer if it holds any, else
// with one read — straight into p when p is at least as large as the
// buffer, as bufio does.
func (b *readBuf) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.r == b.w {
		if b.err != nil {
			return 0, b.readErr()
		}
		if len(p) >= len(b.buf) {
			return b.src.Read(p)
		}
		b.fill()
		if b.r == b.w {
			return 0, b.readErr()
		}
	}
	n := copy(p, b.buf[b.r:b.w])
	b.r += n
	return n, nil
}
