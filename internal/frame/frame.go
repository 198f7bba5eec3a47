// Package frame encodes and decodes the frames that carry a
// transport.Message over a byte stream. The tcp and mux transports share it,
// and WIRE.md is its specification: a 10-byte prefix (version, flags, header
// block length, body length, big-endian), the header block (uvarint-length
// prefixed keys and values), then the body.
package frame

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/zerodial/transport"
)

const (
	// Version is the only frame version this package reads and writes.
	Version = 1
	// PrefixLen is the size of the fixed frame prefix.
	PrefixLen = 10
	// MaxHeaderEntries bounds the entries in one header block, so that a
	// hostile block of empty keys cannot make a map of millions of entries.
	MaxHeaderEntries = 1024
)

// HeaderLen returns the encoded size of h's header block.
func HeaderLen(h map[string]string) int {
	n := 0
	for k, v := range h {
		n += EntryLen(k, v)
	}
	return n
}

// EntryLen returns the encoded size of one header entry: what it adds to
// HeaderLen.
func EntryLen(k, v string) int {
	return uvarintLen(len(k)) + len(k) + uvarintLen(len(v)) + len(v)
}

// Size returns the size of m as the frame limit counts it: the header block
// plus the body, without the fixed prefix.
func Size(m *transport.Message) int {
	return HeaderLen(m.Header) + len(m.Body)
}

// Check returns ErrFrameTooLarge, wrapped with the sizes, when m exceeds max.
// It returns the header block length for use by the caller.
func Check(m *transport.Message, max int) (int, error) {
	if len(m.Header) > MaxHeaderEntries {
		return 0, fmt.Errorf("%w: %d header entries, limit %d", transport.ErrFrameTooLarge, len(m.Header), MaxHeaderEntries)
	}
	hl := HeaderLen(m.Header)
	if size := hl + len(m.Body); size > max {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", transport.ErrFrameTooLarge, size, max)
	}
	return hl, nil
}

// Announced is the error of a receiver whose peer announced a frame of size
// bytes (header block and body) over its limit max: what a Reader says, and
// what an end that does not read frames says in its words.
func Announced(size uint64, max int) error {
	return fmt.Errorf("%w: peer announced %d bytes, limit %d", transport.ErrFrameTooLarge, size, max)
}

func uvarintLen(x int) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// Reader reads frames from a buffered stream. It is not safe for concurrent
// use; the caller serialises Read calls.
type Reader struct {
	r       bufferedReader
	max     int
	scratch []byte
	prefix  [PrefixLen]byte
	interns Interner
	// flags are the frame flags this Reader accepts: FlagS2 once this end
	// announced it, else none.
	flags byte
}

// bufferedReader is what a Reader reads from: a *bufio.Reader, or a
// socket's readBuf.
type bufferedReader interface {
	io.Reader
	Peek(n int) ([]byte, error)
	Buffered() int
}

// NewReader returns a Reader of r that refuses frames larger than max.
func NewReader(r *bufio.Reader, max int) *Reader {
	return &Reader{r: r, max: max}
}

// waitFrame waits for the first byte of the next frame, consuming nothing.
func (fr *Reader) waitFrame() error {
	_, err := fr.r.Peek(1)
	return err
}

// buffered reports whether the whole of the next frame is in the read
// buffer, so that reading it cannot wait for the peer.
func (fr *Reader) buffered() bool {
	n := fr.r.Buffered()
	if n < PrefixLen {
		return false
	}
	p, _ := fr.r.Peek(PrefixLen)
	hl := uint64(binary.BigEndian.Uint32(p[2:6]))
	bl := uint64(binary.BigEndian.Uint32(p[6:10]))
	return uint64(n) >= PrefixLen+hl+bl
}

// MidFrameError wraps an error that happened after part of a frame was read:
// the stream is out of step and must be closed.
type MidFrameError struct{ Err error }

func (e *MidFrameError) Error() string { return e.Err.Error() }
func (e *MidFrameError) Unwrap() error { return e.Err }

// chunk is how much body is allocated ahead of the bytes that arrive, so that
// a peer announcing a large frame and sending nothing costs little.
const chunk = 64 << 10

// Read reads one frame into m. It waits for the first byte without consuming
// anything, so an error returned before the frame starts (a deadline, EOF)
// leaves the stream usable; an error after that is wrapped in *MidFrameError.
func (fr *Reader) Read(m *transport.Message) error {
	if _, err := fr.r.Peek(1); err != nil {
		return err
	}
	p := fr.prefix[:] // a field, not a local: a local would escape to the heap
	if _, err := io.ReadFull(fr.r, p); err != nil {
		return &MidFrameError{unexpected(err)}
	}
	if p[0] != Version {
		return &MidFrameError{fmt.Errorf("%w: frame version %d, want %d", transport.ErrProtocol, p[0], Version)}
	}
	if p[1]&^fr.flags != 0 {
		return &MidFrameError{fmt.Errorf("%w: unknown frame flags %#x", transport.ErrProtocol, p[1])}
	}
	hl := uint64(binary.BigEndian.Uint32(p[2:6]))
	bl := uint64(binary.BigEndian.Uint32(p[6:10]))
	if hl+bl > uint64(fr.max) {
		return &MidFrameError{Announced(hl+bl, fr.max)}
	}
	if err := fr.readHeader(m, int(hl)); err != nil {
		return &MidFrameError{err}
	}
	var err error
	if p[1]&FlagS2 != 0 {
		err = fr.readPacked(m, int(hl), int(bl))
	} else {
		err = fr.readBody(m, int(bl))
	}
	if err != nil {
		return &MidFrameError{err}
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (fr *Reader) readHeader(m *transport.Message, hl int) error {
	if m.Header == nil {
		if hl == 0 {
			return nil
		}
		m.Header = make(map[string]string, 4)
	} else {
		clear(m.Header)
	}
	if hl == 0 {
		return nil
	}
	if cap(fr.scratch) < hl {
		// Bounded by max, checked by the caller; grown as the block arrives
		// for the same reason the body is.
		fr.scratch = make([]byte, 0, min(hl, chunk))
	}
	buf, err := readGrowing(fr.r, fr.scratch[:0], hl)
	fr.scratch = buf[:0]
	if err == nil {
		err = fr.interns.ParseHeader(m.Header, buf) // copies what it keeps out of buf
	}
	if cap(fr.scratch) > maxKeptHeaderBlock {
		// Sized by what the peer sent once: not kept for the connection's
		// life.
		fr.scratch = nil
	}
	return err
}

// maxKeptHeaderBlock bounds the header buffer a Reader keeps between
// frames; ordinary header blocks are a few hundred bytes.
const maxKeptHeaderBlock = 16 << 10

// ParseHeader parses a header block b, the wire's (WIRE.md), into h: each
// key and value a uvarint length and its bytes, at most MaxHeaderEntries
// entries, no key twice. It copies what it keeps out of b, reusing the
// strings of the header it parsed last (Interner). A Reader parses every
// message's header with it, and so does the shm transport's, from its
// ring, so that both refuse a header block in the same words.
func (in *Interner) ParseHeader(h map[string]string, b []byte) error {
	for len(b) > 0 {
		k, rest, err := field(b)
		if err != nil {
			return err
		}
		v, rest, err := field(rest)
		if err != nil {
			return err
		}
		b = rest
		if len(h) >= MaxHeaderEntries {
			return fmt.Errorf("%w: more than %d header entries", transport.ErrProtocol, MaxHeaderEntries)
		}
		if _, dup := h[string(k)]; dup {
			return fmt.Errorf("%w: duplicate header key %q", transport.ErrProtocol, k)
		}
		ks, vs := in.Field(k, v)
		h[ks] = vs
	}
	return nil
}

func field(b []byte) (f, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, fmt.Errorf("%w: bad header field length", transport.ErrProtocol)
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

func (fr *Reader) readBody(m *transport.Message, bl int) error {
	if bl == 0 {
		m.Body = m.Body[:0]
		return nil
	}
	buf, err := readGrowing(fr.r, m.Body[:0], bl)
	m.Body = buf
	return err
}

// readGrowing appends exactly n bytes from r to buf, growing buf at most one
// chunk ahead of what has arrived.
func readGrowing(r io.Reader, buf []byte, n int) ([]byte, error) {
	if cap(buf) >= n {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, unexpected(err)
	}
	for len(buf) < n {
		step := min(n-len(buf), chunk)
		if cap(buf)-len(buf) < step {
			// Double, so that a large frame costs a few allocations and
			// copies, never more than twice what has arrived.
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), len(buf)+step)))
			copy(grown, buf)
			buf = grown
		}
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+got]
		if err != nil {
			return buf, unexpected(err)
		}
	}
	return buf, nil
}

// IsMidFrame reports whether err left the stream out of step.
func IsMidFrame(err error) bool {
	var mf *MidFrameError
	return errors.As(err, &mf)
}
