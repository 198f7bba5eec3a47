package mux

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
)

func header(typ uint8, flags uint16, id, length uint32) []byte {
	h := make([]byte, hdrLen)
	h[0] = protoVersion
	h[1] = typ
	binary.BigEndian.PutUint16(h[2:], flags)
	binary.BigEndian.PutUint32(h[4:], id)
	binary.BigEndian.PutUint32(h[8:], length)
	return h
}

// TestScannerSplits: the scanner finds the same flags however the byte
// stream is cut, and passes over data payloads, whatever they hold.
func TestScannerSplits(t *testing.T) {
	var stream []byte
	add := func(b ...[]byte) {
		for _, p := range b {
			stream = append(stream, p...)
		}
	}
	payload := header(typeData, flagFIN|flagRST, 99, 0) // bytes that look like a header
	add(header(typeWindowUpd, flagSYN, 1, 0))
	add(header(typeData, 0, 1, uint32(len(payload))), payload)
	add(header(2 /* ping */, flagSYN, 0, 7))
	add(header(typeData, flagFIN, 1, 3), []byte("end"))
	add(header(typeWindowUpd, flagRST, 3, 0))

	type event struct {
		flags uint16
		id    uint32
	}
	want := []event{{flagSYN, 1}, {flagFIN, 1}, {flagRST, 3}}
	for cut := 1; cut <= len(stream); cut++ {
		var s scanner
		var got []event
		for b := stream; len(b) > 0; {
			n := min(cut, len(b))
			s.scan(b[:n], func(flags uint16, id uint32) { got = append(got, event{flags, id}) })
			b = b[n:]
		}
		if !assert.Equal(t, want, got, "cut every %d bytes", cut) {
			return
		}
	}
}

// TestScannerStopsOnGarbage: bytes that are not yamux stop the scanner;
// yamux fails the session on them itself.
func TestScannerStopsOnGarbage(t *testing.T) {
	var s scanner
	calls := 0
	s.scan([]byte("GET / HTTP/1.1\r\n\r\n"), func(uint16, uint32) { calls++ })
	assert.True(t, s.broken)
	assert.Zero(t, calls)
}

// TestTrackerForgets: a stream is forgotten once both ends have closed it,
// or either has reset it; a peer's close reaches the stream even when it
// comes before the stream is handed out.
func TestTrackerForgets(t *testing.T) {
	tr := newTracker()
	tr.seen(true, flagSYN, 1)
	tr.seen(false, flagFIN, 1)
	tr.seen(true, flagFIN, 1)
	tr.seen(false, flagSYN, 2)
	tr.seen(true, flagRST, 2)
	tr.seen(false, flagFIN, 5) // never opened: ignored
	assert.Zero(t, tr.open())
	tr.seen(false, flagSYN, 4)
	assert.Equal(t, 1, tr.open())
}
