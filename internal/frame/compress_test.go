package frame

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// text returns n bytes of JSON-like text, which S2 shrinks about threefold.
func text(n int) []byte {
	var b bytes.Buffer
	x := uint32(2463534242)
	next := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d","active":%t,"score":%d},`, i, next()%10000, next()%2 == 0, next()%1000)
	}
	return b.Bytes()[:n]
}

// noise returns n bytes S2 cannot shrink.
func noise(n int) []byte {
	p := make([]byte, n)
	x := uint32(2463534242)
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}

// counted is a net.Conn that counts the bytes written to it.
type counted struct {
	net.Conn
	n atomic.Int64
}

func (c *counted) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// compressedPair returns two Sockets over net.Pipe that compress bodies of
// at least 1 KiB and accept compressed frames, and the writer side's
// counter.
func compressedPair(t *testing.T) (a, b *Socket, wrote *counted) {
	ca, cb := net.Pipe()
	wrote = &counted{Conn: ca}
	c := Compression{Min: 1 << 10, Accept: true}
	a = NewSocket(wrote, 8<<20).WithCompression(c)
	b = NewSocket(cb, 8<<20).WithCompression(c)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, wrote
}

// TestCompressedRoundTrip: every way of sending delivers the body the
// sender gave, and a compressible one crosses the wire smaller.
func TestCompressedRoundTrip(t *testing.T) {
	body := text(1 << 20)
	for name, send := range map[string]func(*Socket, *transport.Message) error{
		"Send":      (*Socket).Send,
		"SendAsync": (*Socket).SendAsync,
		"Queue": func(s *Socket, m *transport.Message) error {
			flush, err := s.Queue(m)
			if err == nil && flush {
				err = s.Flush(t.Context())
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, b, wrote := compressedPair(t)
			sent := make(chan error, 1)
			go func() {
				sent <- send(a, &transport.Message{Header: map[string]string{"k": "v"}, Body: body})
			}()
			var m transport.Message
			require.NoError(t, b.Recv(&m))
			require.NoError(t, <-sent)
			require.NoError(t, a.WaitWritten(t.Context()))
			assert.Equal(t, "v", m.Header["k"])
			assert.True(t, bytes.Equal(body, m.Body), "the body changed on the way")
			assert.Less(t, wrote.n.Load(), int64(len(body)/2), "a compressible MiB crossed at full size")
		})
	}
}

// TestCompressionSkipsWhatDoesNotShrink: a body below the threshold, and
// one compression cannot shrink, go as they are; after such a body the
// next few are not tried.
func TestCompressionSkipsWhatDoesNotShrink(t *testing.T) {
	a, b, wrote := compressedPair(t)
	exchange := func(body []byte) (onWire int64) {
		before := wrote.n.Load()
		sent := make(chan error, 1)
		go func() { sent <- a.Send(&transport.Message{Body: body}) }()
		var m transport.Message
		require.NoError(t, b.Recv(&m))
		require.NoError(t, <-sent)
		require.True(t, bytes.Equal(body, m.Body))
		return wrote.n.Load() - before
	}
	small := bytes.Repeat([]byte("a"), 1<<10-1)
	assert.Equal(t, int64(PrefixLen+len(small)), exchange(small), "a body below the threshold was compressed")
	rnd := noise(64 << 10)
	assert.Equal(t, int64(PrefixLen+len(rnd)), exchange(rnd), "an incompressible body was sent compressed")
	assert.Equal(t, int32(backoff), a.pack.skip.Load(), "no back-off after a body that did not shrink")
	txt := text(64 << 10)
	for range backoff {
		assert.Equal(t, int64(PrefixLen+len(txt)), exchange(txt), "compressed during the back-off")
	}
	assert.Less(t, exchange(txt), int64(len(txt)/2), "not compressed once the back-off is over")
}

// TestCompressedFrameRefused: a receiver that did not announce S2 refuses
// a compressed frame as it refuses any unknown flag.
func TestCompressedFrameRefused(t *testing.T) {
	body := s2.Encode(nil, text(4<<10))
	b := append(prefix(Version, FlagS2, 0, uint32(len(body))), body...)
	_, err := read(b, 1<<20)
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.True(t, IsMidFrame(err))
	_, err = readAccepting(append(prefix(Version, FlagS2|0x02, 0, uint32(len(body))), body...), 1<<20)
	assert.ErrorIs(t, err, transport.ErrProtocol, "an unknown flag beside S2")
}

func readAccepting(b []byte, max int) (*transport.Message, error) {
	var m transport.Message
	r := NewReader(bufio.NewReader(bytes.NewReader(b)), max)
	r.flags = FlagS2
	err := r.Read(&m)
	return &m, err
}

// TestDecompressionBomb: 64 MiB of zeros compress to a few KiB, well
// inside a 4 MiB limit; the receiver refuses the frame from the length the
// block states, before it allocates for it, as it would refuse the same
// bytes sent plain.
func TestDecompressionBomb(t *testing.T) {
	bomb := s2.Encode(nil, make([]byte, 64<<20))
	require.Less(t, len(bomb), 4<<20)
	frame := append(prefix(Version, FlagS2, 0, uint32(len(bomb))), bomb...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := readAccepting(frame, 4<<20)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, transport.ErrFrameTooLarge)
	assert.Contains(t, err.Error(), "peer announced 67108864 bytes, limit 4194304")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2*len(bomb)+(1<<20)), "the receiver allocated for the decoded size")

	// The header block counts against the limit with the decoded body.
	body := s2.Encode(nil, make([]byte, 1000))
	hdr := []byte{1, 'k', 1, 'v'}
	f := append(append(prefix(Version, FlagS2, uint32(len(hdr)), uint32(len(body))), hdr...), body...)
	_, err = readAccepting(f, 1003)
	assert.ErrorIs(t, err, transport.ErrFrameTooLarge)
	m, err := readAccepting(f, 1004)
	require.NoError(t, err)
	assert.Len(t, m.Body, 1000)
}

// TestCorruptCompressedBody: a block that is not S2, or whose data does
// not make the length it states, is a protocol error, and nothing beyond
// the stated length (itself within the limit) is allocated.
func TestCorruptCompressedBody(t *testing.T) {
	good := s2.Encode(nil, text(8<<10))
	for name, body := range map[string][]byte{
		"no length":        {0xff},
		"truncated":        good[:len(good)/2],
		"length too large": append(uvarint(len(text(8<<10))+1), good[len(uvarint(8<<10)):]...),
		"garbage":          append(uvarint(100), 0xff, 0xff, 0xff, 0xff),
	} {
		_, err := readAccepting(append(prefix(Version, FlagS2, 0, uint32(len(body))), body...), 1<<20)
		assert.ErrorIs(t, err, transport.ErrProtocol, name)
		assert.True(t, IsMidFrame(err), name)
	}
	// An empty body compressed is still a body.
	empty := s2.Encode(nil, nil)
	m, err := readAccepting(append(prefix(Version, FlagS2, 0, uint32(len(empty))), empty...), 1<<20)
	require.NoError(t, err)
	assert.Empty(t, m.Body)
	// A stream cut inside a compressed body is cut short, as any frame.
	_, err = readAccepting(append(prefix(Version, FlagS2, 0, uint32(len(good))), good[:10]...), 1<<20)
	assert.True(t, errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
}

// uvarint is the length S2 starts a block with.
func uvarint(n int) []byte {
	var b []byte
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// TestSmallSendsDoNotAllocate: with compression on, a body under the
// threshold costs what it did without.
func TestSmallSendsDoNotAllocate(t *testing.T) {
	a, b, _ := compressedPair(t)
	go func() {
		var m transport.Message
		for b.Recv(&m) == nil {
		}
	}()
	m := &transport.Message{Body: []byte("sixteen bytes..")}
	allocs := testing.AllocsPerRun(100, func() { require.NoError(t, a.Send(m)) })
	assert.Zero(t, allocs)
}

// TestWireCompressedExample: the compressed frame WIRE.md gives as its example
// ("Compression") reads as it says: header {"k": "v"}, 1,000 zero bytes.
func TestWireCompressedExample(t *testing.T) {
	b := []byte{0x01, 0x01, 0, 0, 0, 4, 0, 0, 0, 0x0a, 0x01, 'k', 0x01, 'v',
		0xe8, 0x07, 0x00, 0x00, 0x11, 0x01, 0x19, 0x00, 0xdb, 0x02}
	m, err := readAccepting(b, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, m.Header)
	assert.Equal(t, make([]byte, 1000), m.Body)
}
