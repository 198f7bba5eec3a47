package codec

import (
	"encoding/binary"
	"fmt"
)

// MaxDepth bounds how deeply arrays and maps may nest in a body that Msgpack
// decodes. The msgpack decoder recurses once per level, so without a bound a
// body of a few megabytes of nested array headers would take a goroutine
// stack of gigabytes. The value is the one encoding/json uses.
const MaxDepth = 10000

// validate checks that data is exactly one well-formed msgpack value whose
// declared sizes fit in the bytes actually present, and whose nesting is at
// most MaxDepth. It runs before the msgpack decoder, which pre-allocates by
// the sizes a body declares: once validate has passed, every declared string,
// binary, extension and container is known to be backed by real bytes, so
// decoding allocates in proportion to len(data).
//
// It walks the encoding in one pass without recursion, keeping a stack of
// how many items each open container still expects. It allocates nothing
// unless the nesting is deeper than the stack's initial array, and then once,
// 8 bytes a level, at most 80 KB.
//
// Extension data is opaque to the walk, but the msgpack decoder does not
// always treat it so: where it expects a map and finds an extension, it skips
// the extension's header and reads a map from the extension's data, then
// goes on reading from wherever that map ends — bytes this walk never saw as
// values. validate therefore appends to guards the offset of the data of
// every extension that could be read that way (see needsGuard), and the
// decoder's reader refuses to read a type byte at those offsets (see
// guardedReader). The result is guards, extended.
func validate(data []byte, guards []int) ([]int, error) {
	var initial [32]uint64
	open := initial[:0] // items still expected by each open array or map
	pos := 0
	for {
		if pos >= len(data) {
			if pos == 0 {
				return guards, fmt.Errorf("%w: empty body", ErrMalformed)
			}
			return guards, fmt.Errorf("%w: truncated at byte %d: %d more item(s) expected in open arrays or maps",
				ErrMalformed, pos, sum(open))
		}
		start := pos
		c := data[pos]
		pos++

		var (
			payload uint64 // bytes that follow the header: str, bin, ext data, numbers
			items   uint64 // items that follow: array elements, or map keys and values
			isCont  bool
			kind    string
		)
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
			// fixint, nil, bool: the header is the whole value.
		case c <= 0x8f:
			kind, isCont, items = "map", true, 2*uint64(c&0x0f)
		case c <= 0x9f:
			kind, isCont, items = "array", true, uint64(c&0x0f)
		case c <= 0xbf:
			kind, payload = "str", uint64(c&0x1f)
		case c == 0xc1:
			return guards, fmt.Errorf("%w: reserved type byte 0xc1 at byte %d", ErrMalformed, start)
		default:
			// The remaining type bytes carry a length or a fixed-size
			// payload after them.
			var err error
			kind, payload, items, isCont, pos, err = header(data, start)
			if err != nil {
				return guards, err
			}
		}

		remaining := uint64(len(data) - pos)
		if isCont {
			// Every item takes at least one byte, so a container cannot
			// declare more items than there are bytes left.
			if items > remaining {
				n := items
				if kind == "map" {
					n /= 2
				}
				return guards, fmt.Errorf("%w: %s at byte %d declares %d %s (at least %d bytes) but only %d bytes remain",
					ErrMalformed, kind, start, n, entriesWord(kind), items, remaining)
			}
			if len(open)+1 > MaxDepth {
				return guards, fmt.Errorf("%w: %s at byte %d opens level %d, more than MaxDepth (%d)",
					ErrTooDeep, kind, start, len(open)+1, MaxDepth)
			}
			if items > 0 {
				if len(open) == cap(open) {
					// Grow once to the most this body can need, rather
					// than by doubling: each level takes a byte, and
					// MaxDepth bounds the rest.
					grown := make([]uint64, len(open), min(MaxDepth, len(data)))
					copy(grown, open)
					open = grown
				}
				open = append(open, items)
				continue
			}
		} else {
			if payload > remaining {
				return guards, payloadError(kind, start, payload, remaining)
			}
			if (kind == "ext" || kind == "fixext") && needsGuard(data[pos:pos+int(payload)]) {
				guards = append(guards, pos+1)
			}
			pos += int(payload)
		}

		// A value is complete: count it against the containers it closes.
		for len(open) > 0 {
			open[len(open)-1]--
			if open[len(open)-1] > 0 {
				break
			}
			open = open[:len(open)-1]
		}
		if len(open) == 0 {
			if pos != len(data) {
				return guards, fmt.Errorf("%w: %d trailing byte(s) after the value ending at byte %d",
					ErrMalformed, len(data)-pos, pos)
			}
			return guards, nil
		}
	}
}

// header decodes the type bytes 0xc4 to 0xdf, whose header is longer than
// one byte, starting at data[start]. It returns the position after the
// header.
func header(data []byte, start int) (kind string, payload, items uint64, isCont bool, pos int, err error) {
	c := data[start]
	pos = start + 1
	var size int // bytes of the length field, or 0 for a fixed payload
	switch c {
	case 0xc4, 0xc5, 0xc6: // bin 8, 16, 32
		kind, size = "bin", 1<<(c-0xc4)
	case 0xc7, 0xc8, 0xc9: // ext 8, 16, 32; the type byte follows the length
		kind, size = "ext", 1<<(c-0xc7)
	case 0xca:
		kind, payload = "float32", 4
	case 0xcb:
		kind, payload = "float64", 8
	case 0xcc, 0xcd, 0xce, 0xcf: // uint 8, 16, 32, 64
		kind, payload = "uint", 1<<(c-0xcc)
	case 0xd0, 0xd1, 0xd2, 0xd3: // int 8, 16, 32, 64
		kind, payload = "int", 1<<(c-0xd0)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16, plus the type byte
		kind, payload = "fixext", 1+1<<(c-0xd4)
	case 0xd9, 0xda, 0xdb: // str 8, 16, 32
		kind, size = "str", 1<<(c-0xd9)
	case 0xdc, 0xdd: // array 16, 32
		kind, size, isCont = "array", 2<<(c-0xdc), true
	case 0xde, 0xdf: // map 16, 32
		kind, size, isCont = "map", 2<<(c-0xde), true
	}
	if size == 0 {
		return kind, payload, 0, false, pos, nil
	}
	if len(data)-pos < size {
		return "", 0, 0, false, 0, fmt.Errorf("%w: truncated %s header at byte %d: needs %d length bytes, %d remain",
			ErrMalformed, kind, start, size, len(data)-pos)
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(data[pos])
	case 2:
		n = uint64(binary.BigEndian.Uint16(data[pos:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(data[pos:]))
	}
	pos += size
	switch {
	case kind == "ext":
		payload = n + 1 // the type byte, then n bytes of data
	case kind == "map":
		items = 2 * n
	case isCont:
		items = n
	default:
		payload = n
	}
	return kind, payload, items, isCont, pos, nil
}

// payloadError describes a value whose bytes run past the end of the body,
// in the terms its header used.
func payloadError(kind string, start int, payload, remaining uint64) error {
	switch kind {
	case "str", "bin":
		return fmt.Errorf("%w: %s at byte %d declares %d bytes but only %d remain",
			ErrMalformed, kind, start, payload, remaining)
	case "ext":
		return fmt.Errorf("%w: ext at byte %d declares a type byte and %d data bytes but only %d bytes remain",
			ErrMalformed, start, payload-1, remaining)
	}
	return fmt.Errorf("%w: truncated %s at byte %d: needs %d bytes, %d remain",
		ErrMalformed, kind, start, payload, remaining)
}

func entriesWord(kind string) string {
	if kind == "map" {
		return "entries"
	}
	return "items"
}

func sum(open []uint64) uint64 {
	var n uint64
	for _, v := range open {
		n += v
	}
	return n
}
