package shm

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/zerodial/transport"
)

// The layout of one ring in the shared mapping (docs/shm.md, "Layout").
// Each counter has a cache line of its own, so that the writer's stores do
// not slow the reader's loads of the other counter, and the reverse.
//
//	offset  size  word          written by
//	0       8     head          the writer: bytes written since the start
//	64      4     readerParked  the reader sets 1 before it sleeps; the writer swaps it to 0 and wakes it
//	128     8     tail          the reader: bytes read since the start
//	192     4     writerParked  the writer sets 1 before it sleeps; the reader swaps it to 0 and wakes it
//	256     size  data          bytes at offset pos mod size
//
// The counters only grow (a uint64 of bytes does not wrap in practice), so
// head-tail is what the ring holds, and it is empty when they are equal.
// Each end keeps its own counter in local memory and only ever stores it
// to the shared word: what it reads of the shared mapping is the peer's
// counter, which a hostile or broken peer may set to anything at any time.
// So each load of it is checked at once, into a local, before it is used.
const (
	offHead         = 0
	offReaderParked = 64
	offTail         = 128
	offWriterParked = 192
	ringHeader      = 256
)

// Ring sizes: a power of two, so that a position's offset is a mask, and
// bounded, so that a peer cannot make this end map a huge region.
const (
	minRingSize     = 64 << 10
	maxRingSize     = 256 << 20
	defaultRingSize = 2 << 20
)

// ring is one direction of a connection: a single-producer,
// single-consumer byte ring in shared memory. Each end of the connection
// uses one ring as writer and the other as reader; its Send and Recv
// serialise their callers, so that each ring has one writer and one reader
// at a time.
//
// The counters are read and written with sync/atomic, whose operations Go
// defines as sequentially consistent (the memory model: "all the atomic
// operations executed in a program behave as though executed in some
// sequentially consistent order"); the instructions the compiler emits for
// them (XCHG and LOCK-prefixed ones on amd64, LDAR/STLR on arm64) order the
// memory itself, so the guarantee holds between two processes mapping the
// same pages. Two orders matter:
//   - the writer copies the bytes, then stores head; the reader loads head,
//     then copies the bytes below it (release and acquire);
//   - a parked flag against a counter (Dekker's pattern): the reader stores
//     readerParked=1 and then loads head, while the writer stores head and
//     then loads readerParked, so at least one sees the other, and a reader
//     never sleeps while data it has not seen waits unannounced.
type ring struct {
	data []byte // the ring's bytes, len a power of two
	mask uint64
	head *atomic.Uint64
	tail *atomic.Uint64
	// readerParked and writerParked are the parked flags (see the layout).
	readerParked *atomic.Uint32
	writerParked *atomic.Uint32
}

// ringBytes is the size of one ring in the mapping: its header and data.
func ringBytes(size int) int { return ringHeader + size }

// mapBytes is the size of a connection's mapping: two rings.
func mapBytes(size int) int { return 2 * ringBytes(size) }

// validRingSize reports whether n is a ring size both ends accept.
func validRingSize(n int) bool {
	return n >= minRingSize && n <= maxRingSize && n&(n-1) == 0
}

// newRing returns the ring whose header starts mem, which holds
// ringBytes(size) bytes, 8-byte aligned (a mapping is page aligned).
func newRing(mem []byte, size int) *ring {
	mem = mem[:ringBytes(size)]
	return &ring{
		data:         mem[ringHeader:],
		mask:         uint64(size - 1),
		head:         (*atomic.Uint64)(unsafe.Pointer(&mem[offHead])),
		tail:         (*atomic.Uint64)(unsafe.Pointer(&mem[offTail])),
		readerParked: (*atomic.Uint32)(unsafe.Pointer(&mem[offReaderParked])),
		writerParked: (*atomic.Uint32)(unsafe.Pointer(&mem[offWriterParked])),
	}
}

// errCorrupt is the error of a ring whose peer-written counter is
// impossible: the peer is broken or hostile, and the connection is closed.
func errCorrupt(what string, got, pos uint64) error {
	return fmt.Errorf("%w: shared ring's %s is %d, at %d bytes this end holds: the peer wrote out of turn",
		transport.ErrProtocol, what, got, pos)
}

// size returns the ring's data size.
func (r *ring) size() uint64 { return r.mask + 1 }

// free returns how many bytes the writer, at position pos, may write: the
// size less what the reader has not read. A tail behind pos by more than
// the size, or ahead of it, is the peer's lie.
func (r *ring) free(pos uint64) (int, error) {
	t := r.tail.Load() // the peer's word: checked, in a local, before use
	used := pos - t
	if used > r.size() {
		return 0, errCorrupt("tail", t, pos)
	}
	return int(r.size() - used), nil
}

// avail returns how many bytes the reader, at position pos, may read. A
// head ahead of pos by more than the size, or behind it, is the peer's
// lie.
func (r *ring) avail(pos uint64) (int, error) {
	h := r.head.Load() // the peer's word: checked, in a local, before use
	n := h - pos
	if n > r.size() {
		return 0, errCorrupt("head", h, pos)
	}
	return int(n), nil
}

// put copies b into the ring at pos, which the caller made room for
// (free), wrapping at the end.
func (r *ring) put(pos uint64, b []byte) {
	off := int(pos & r.mask)
	n := copy(r.data[off:], b)
	copy(r.data, b[n:])
}

// get copies len(b) bytes out of the ring at pos, which the caller saw
// were there (avail), wrapping at the end.
func (r *ring) get(pos uint64, b []byte) {
	off := int(pos & r.mask)
	n := copy(b, r.data[off:])
	copy(b[n:], r.data)
}

// publish stores the writer's new position, and reports whether the
// reader asked to be woken: if so, the flag is cleared here and the
// caller wakes it. The load before the swap keeps the common case (a
// busy reader, no flag) to a store and a load.
func (r *ring) publish(pos uint64) (wake bool) {
	r.head.Store(pos)
	return r.readerParked.Load() != 0 && r.readerParked.Swap(0) != 0
}

// release stores the reader's new position, and reports whether the
// writer asked to be woken, clearing the flag as publish does.
func (r *ring) release(pos uint64) (wake bool) {
	r.tail.Store(pos)
	return r.writerParked.Load() != 0 && r.writerParked.Swap(0) != 0
}
