package codec

import (
	"bytes"
	"errors"
	"fmt"
)

// needsGuard reports whether the decoder must be kept from reading ext, an
// extension's type byte followed by its data, as msgpack values. Reading the
// data as a map, the way the decoder does where it expects a map, only gets
// past the first byte when that byte is a map header or nil, and the only
// extension the decoder itself understands is the timestamp (type -1), which
// it reads as raw bytes. Any other type is left to decoders registered by
// the program, which may read the data as msgpack that this walk has not
// checked, so those are guarded too.
func needsGuard(ext []byte) bool {
	if len(ext) < 2 {
		return false // no data: a read there is a read of the next value
	}
	switch c := ext[1]; {
	case c >= 0x80 && c <= 0x8f, c == 0xde, c == 0xdf, c == 0xc0:
		return true
	}
	return int8(ext[0]) != -1
}

// guardedReader is what the decoder reads a body through. Being a
// bytes.Reader, it copies what it reads into the decoder's own storage, so
// nothing decoded aliases the body. It also refuses to read a type byte at
// the offsets in guards, the starts of extension data that validate could
// not vouch for as msgpack.
//
// The decoder reads every type byte with ReadByte, and reads extension data
// it understands (timestamps, and types registered with msgpack.RegisterExt)
// with Read, so the guard stops exactly the reads that would interpret
// extension data as values.
type guardedReader struct {
	bytes.Reader
	guards  []int // sorted offsets
	next    int   // guards[:next] are behind the read position
	tripped int   // the guard that stopped a read, or -1
}

func (r *guardedReader) reset(data []byte) {
	r.Reader.Reset(data)
	r.next = 0
	r.tripped = -1
}

func (r *guardedReader) ReadByte() (byte, error) {
	if r.next < len(r.guards) {
		pos := int(r.Size()) - r.Len()
		for r.next < len(r.guards) && r.guards[r.next] < pos {
			r.next++
		}
		if r.next < len(r.guards) && r.guards[r.next] == pos {
			r.tripped = pos
			return 0, errGuard
		}
	}
	return r.Reader.ReadByte()
}

var errGuard = errors.New("codec: read of extension data as msgpack refused")

func guardError(pos int) error {
	return fmt.Errorf("%w: extension data at byte %d read as msgpack values "+
		"(an extension where a map is expected?); extension data is opaque and unchecked",
		ErrMalformed, pos)
}
