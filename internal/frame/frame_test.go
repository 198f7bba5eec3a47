package frame

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// encode returns the frame Socket.Send would write for m.
func encode(m *transport.Message) []byte {
	return append(appendHead(nil, m.Header, HeaderLen(m.Header), packed{body: m.Body}), m.Body...)
}

func read(b []byte, max int) (*transport.Message, error) {
	var m transport.Message
	err := NewReader(bufio.NewReader(bytes.NewReader(b)), max).Read(&m)
	return &m, err
}

func TestWireExample(t *testing.T) {
	// The example in WIRE.md, byte for byte.
	want := []byte{1, 0, 0, 0, 0, 4, 0, 0, 0, 2, 1, 'k', 1, 'v', 'h', 'i'}
	got := encode(&transport.Message{Header: map[string]string{"k": "v"}, Body: []byte("hi")})
	require.Equal(t, want, got)
	m, err := read(want, 100)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, m.Header)
	assert.Equal(t, "hi", string(m.Body))
}

func prefix(version, flags byte, hl, bl uint32) []byte {
	p := []byte{version, flags}
	p = binary.BigEndian.AppendUint32(p, hl)
	return binary.BigEndian.AppendUint32(p, bl)
}

func TestReadRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"version", prefix(2, 0, 0, 0), transport.ErrProtocol},
		{"flags", prefix(1, 1, 0, 0), transport.ErrProtocol},
		{"too large", prefix(1, 0, 0, 101), transport.ErrFrameTooLarge},
		{"too large header", prefix(1, 0, 60, 41), transport.ErrFrameTooLarge},
		{"huge lengths", prefix(1, 0, 0xffffffff, 0xffffffff), transport.ErrFrameTooLarge},
		{"key past block", append(prefix(1, 0, 2, 0), 5, 'k'), transport.ErrProtocol},
		{"missing value", append(prefix(1, 0, 2, 0), 1, 'k'), transport.ErrProtocol},
		{"bad uvarint", append(prefix(1, 0, 1, 0), 0x80), transport.ErrProtocol},
		{"duplicate key", append(prefix(1, 0, 8, 0), 1, 'k', 1, 'v', 1, 'k', 1, 'w'), transport.ErrProtocol},
		{"truncated prefix", []byte{1, 0, 0}, io.ErrUnexpectedEOF},
		{"truncated body", append(prefix(1, 0, 0, 10), 1, 2, 3), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := read(tt.in, 100)
			require.ErrorIs(t, err, tt.want)
			require.True(t, IsMidFrame(err), "a broken frame must close the stream")
		})
	}
	_, err := read(nil, 100)
	require.ErrorIs(t, err, io.EOF, "EOF between frames is orderly")
	require.False(t, IsMidFrame(err))
}

func TestTooManyHeaderEntries(t *testing.T) {
	var block []byte
	for range MaxHeaderEntries + 1 {
		block = append(block, 0, 0) // empty key, empty value: the same key again
	}
	_, err := read(append(prefix(1, 0, uint32(len(block)), 0), block...), 1<<20)
	require.ErrorIs(t, err, transport.ErrProtocol)

	h := make(map[string]string)
	for i := range MaxHeaderEntries + 1 {
		h[string(binary.AppendUvarint(nil, uint64(i)))] = ""
	}
	_, err = Check(&transport.Message{Header: h}, 1<<20)
	require.ErrorIs(t, err, transport.ErrFrameTooLarge)
}

// TestAnnouncedSizeCostsLittle: a frame that announces the maximum and then
// sends nothing allocates one chunk, not the announced size.
func TestAnnouncedSizeCostsLittle(t *testing.T) {
	const max = 64 << 20
	in := prefix(1, 0, max/2, max/2)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := read(in, max)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4*chunk), "allocated ahead of the bytes received")
}

func TestReadReusesStrings(t *testing.T) {
	in := encode(&transport.Message{Header: map[string]string{"Service-Method": "Arith.Multiply", "Seq": "1"}, Body: []byte("abc")})
	var stream []byte
	for range 100 {
		stream = append(stream, in...)
	}
	br := bufio.NewReader(bytes.NewReader(stream))
	r := NewReader(br, 1<<20)
	var m transport.Message
	require.NoError(t, r.Read(&m))
	allocs := testing.AllocsPerRun(50, func() {
		if err := r.Read(&m); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "reading a frame with the same headers again allocates")
	assert.Equal(t, "Arith.Multiply", m.Header["Service-Method"])
}

// FuzzRead reads any bytes as a frame, by a Reader that refuses
// compressed frames and by one that accepts them: an error is always
// mid-frame or the end of the stream, and what is accepted encodes back
// (plain) to a frame that reads the same.
func FuzzRead(f *testing.F) {
	f.Add(encode(&transport.Message{Header: map[string]string{"k": "v"}, Body: []byte("hi")}))
	f.Add(encode(&transport.Message{}))
	f.Add(prefix(1, 0, 0xffffffff, 1))
	f.Add(append(prefix(1, 0, 4, 0), 0x80, 0x80, 0x80, 0x01))
	packedBody := s2.Encode(nil, []byte("hello hello hello hello"))
	f.Add(append(prefix(1, FlagS2, 0, uint32(len(packedBody))), packedBody...))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, r := range []func([]byte, int) (*transport.Message, error){read, readAccepting} {
			m, err := r(b, 1<<16)
			if err != nil {
				if !IsMidFrame(err) && !errors.Is(err, io.EOF) {
					t.Fatalf("error outside a frame: %v", err)
				}
				continue
			}
			again, err := read(encode(m), 1<<16)
			require.NoError(t, err)
			assert.Equal(t, len(m.Header), len(again.Header))
			for k, v := range m.Header {
				assert.Equal(t, v, again.Header[k])
			}
			assert.True(t, bytes.Equal(m.Body, again.Body))
		}
	})
}

// TestLongHeadersAreNotKept: a peer that sends long header keys and values
// once cannot make the connection keep them: the Reader remembers only
// short strings, and drops a header buffer grown past its bound. Before,
// 64 headers with 4 MiB keys pinned 256 MiB until the connection closed.
func TestLongHeadersAreNotKept(t *testing.T) {
	h := map[string]string{"Seq": "1"}
	for i := range 8 {
		h[strings.Repeat(string(rune('a'+i)), 64<<10)] = strings.Repeat("v", 64<<10)
	}
	h["Service-Method"] = strings.Repeat("x", 1<<10) // a known key with a long value
	stream := encode(&transport.Message{Header: map[string]string{"Service-Method": "A.B"}})
	stream = append(stream, encode(&transport.Message{Header: h})...)
	stream = append(stream, encode(&transport.Message{Header: map[string]string{"Seq": "2"}})...)
	r := NewReader(bufio.NewReader(bytes.NewReader(stream)), 1<<30)
	var m transport.Message
	require.NoError(t, r.Read(&m))
	require.NoError(t, r.Read(&m))
	assert.Equal(t, h, m.Header, "long headers are delivered whole")
	require.NoError(t, r.Read(&m))
	assert.Equal(t, "2", m.Header["Seq"])

	for k, e := range r.interns.seen {
		assert.LessOrEqual(t, len(k), maxInternedKey)
		assert.LessOrEqual(t, len(e.value), maxInternedValue, "key %q", k)
	}
	assert.LessOrEqual(t, cap(r.scratch), maxKeptHeaderBlock, "the header buffer a peer grew is kept")
}
