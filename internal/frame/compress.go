package frame

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"

	"github.com/zerodial/transport"
)

// FlagS2 is the frame flag of a body compressed with S2's block format
// (WIRE.md, "Compression"). A receiver accepts it only when it announced
// preface.CapS2; any other flag bit is a protocol error.
const FlagS2 byte = 0x01

// Compression says what a Socket does about compressed frames.
type Compression struct {
	// Min is the smallest body the Socket compresses; 0 compresses
	// nothing. Set it only when the peer announced that it accepts S2.
	Min int
	// Accept lets the Socket read frames flagged FlagS2: set it only when
	// this end announced so in its preface.
	Accept bool
}

// backoff is how many bodies a packer leaves uncompressed after one that
// compression did not shrink by an eighth: a connection that carries
// incompressible bodies (already compressed, encrypted, random) pays for a
// compression attempt once in backoff+1 bodies, not for each.
const backoff = 8

// packer compresses bodies for a Socket that sends compressed frames. It
// is safe for concurrent use: Send, SendAsync and Queue pack before they
// take any of the Socket's locks, so that compressing one large body does
// not hold up the frames of other senders.
type packer struct {
	min  int
	skip atomic.Int32 // bodies still to leave uncompressed (backoff)
}

// packed is a body as it goes on the wire: the caller's, or a compressed
// copy in a pooled buffer, which release returns.
type packed struct {
	body  []byte
	flags byte
	buf   *[]byte
}

// pack compresses body when it is worth it: at least p.min bytes, no more
// than max (a larger one is refused before it is written), and shrunk by at
// least an eighth. Otherwise it returns body as it is. A nil packer packs
// nothing.
func (p *packer) pack(body []byte, max int) packed {
	if p == nil || len(body) < p.min || len(body) > max {
		return packed{body: body}
	}
	if p.skip.Load() > 0 {
		p.skip.Add(-1)
		return packed{body: body}
	}
	buf := getBuf(s2.MaxEncodedLen(len(body)))
	out := s2.Encode((*buf)[:cap(*buf)], body)
	if len(out) > len(body)-len(body)/8 {
		putBuf(buf)
		p.skip.Store(backoff)
		return packed{body: body}
	}
	return packed{body: out, flags: FlagS2, buf: buf}
}

// release returns a compressed copy's buffer to the pool, once written or
// copied into the send queue.
func (pk packed) release() {
	if pk.buf != nil {
		putBuf(pk.buf)
	}
}

// bufs holds the buffers of compressed bodies, on both ends: a sender's
// compressed copy lives until it is written, a receiver's until it is
// decoded, so a connection keeps none between frames.
var bufs sync.Pool

func getBuf(n int) *[]byte {
	if b, ok := bufs.Get().(*[]byte); ok && cap(*b) >= n {
		return b
	}
	b := make([]byte, 0, n)
	return &b
}

func putBuf(b *[]byte) {
	*b = (*b)[:0]
	bufs.Put(b)
}

// readPacked reads a body of bl bytes compressed with S2 and decodes it into
// m.Body. The decoded length, which the block states first, is checked
// against the frame limit, less the header block's hl bytes, before
// anything is allocated for it: a small frame that would decode to more
// than the limit (a decompression bomb) fails as a frame too large, as the
// same bytes sent uncompressed would.
func (fr *Reader) readPacked(m *transport.Message, hl, bl int) error {
	buf := getBuf(min(bl, chunk))
	src, err := readGrowing(fr.r, (*buf)[:0], bl)
	*buf = src
	defer putBuf(buf)
	if err != nil {
		return err
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return fmt.Errorf("%w: compressed body: %v", transport.ErrProtocol, err)
	}
	if uint64(hl)+uint64(n) > uint64(fr.max) {
		// In the words of a frame sent plain: the peer announced the
		// size, in the block's first bytes rather than the prefix.
		return Announced(uint64(hl)+uint64(n), fr.max)
	}
	dst := m.Body[:0]
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	out, err := s2.Decode(dst[:n], src)
	if err != nil {
		return fmt.Errorf("%w: compressed body: %v", transport.ErrProtocol, err)
	}
	m.Body = out
	return nil
}
