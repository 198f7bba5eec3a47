package frame

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// chunked yields its chunks one per Read, as a socket does its arrivals.
type chunked struct{ chunks [][]byte }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// A readBuf reads into its small array while reads are small, takes a
// full buffer when a read fills the array, and gives it back once a read
// finds the source drained — without losing or reordering a byte.
func TestReadBufFollowsTheTraffic(t *testing.T) {
	burst := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	src := &chunked{chunks: [][]byte{[]byte("hi"), burst, []byte("lo")}}
	b := newReadBuf(src)
	got := make([]byte, 0, 2+len(burst)+2)
	p := make([]byte, 100)

	n, err := b.Read(p)
	require.NoError(t, err)
	got = append(got, p[:n]...)
	assert.Nil(t, b.big, "a small read stays in the small array")

	sawBig := false
	for len(got) < 2+len(burst) {
		n, err := b.Read(p)
		require.NoError(t, err)
		got = append(got, p[:n]...)
		sawBig = sawBig || b.big != nil
	}
	assert.True(t, sawBig, "a burst is read into a full buffer")
	n, err = b.Read(p)
	require.NoError(t, err)
	got = append(got, p[:n]...)
	assert.Nil(t, b.big, "drained: the full buffer went back")
	assert.Equal(t, append(append([]byte("hi"), burst...), "lo"...), got)
	_, err = b.Read(p)
	assert.Equal(t, io.EOF, err)
}

// Peek waits for what it is asked without taking it, and a read error
// comes after the bytes that preceded it.
func TestReadBufPeek(t *testing.T) {
	b := newReadBuf(iotest.OneByteReader(bytes.NewReader([]byte("0123456789xyz"))))
	p, err := b.Peek(PrefixLen)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(p))
	assert.Equal(t, PrefixLen, b.Buffered())
	all, err := io.ReadAll(b)
	require.NoError(t, err)
	assert.Equal(t, "0123456789xyz", string(all))
	_, err = b.Peek(1)
	assert.Equal(t, io.EOF, err)

	b = newReadBuf(iotest.DataErrReader(bytes.NewReader([]byte("ab"))))
	p, err = b.Peek(3)
	assert.Equal(t, io.EOF, err)
	assert.Equal(t, "ab", string(p))
}

// A source that returns nothing for ever makes a Peek fail, not spin.
func TestReadBufNoProgress(t *testing.T) {
	b := newReadBuf(emptyReader{})
	_, err := b.Peek(1)
	assert.Equal(t, io.ErrNoProgress, err)
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// Frames of every size read through a readBuf as through bufio, whatever
// the source's chunking.
func TestReadBufFrames(t *testing.T) {
	var stream []byte
	var want []transport.Message
	for _, size := range []int{0, 1, 100, 511, 512, 513, 4096, readBufferSize - 1, readBufferSize, 3 * readBufferSize} {
		m := transport.Message{Header: map[string]string{"k": "v"}, Body: bytes.Repeat([]byte{byte(size)}, size)}
		want = append(want, m)
		stream = append(stream, encode(&m)...)
	}
	for _, src := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream)), iotest.HalfReader(bytes.NewReader(stream))} {
		r := &Reader{r: newReadBuf(src), max: 1 << 20}
		for i, w := range want {
			var m transport.Message
			require.NoError(t, r.Read(&m), "frame %d", i)
			assert.Equal(t, w.Header, m.Header)
			assert.Equal(t, len(w.Body), len(m.Body), "frame %d", i)
			assert.True(t, bytes.Equal(w.Body, m.Body), "frame %d", i)
		}
		var m transport.Message
		assert.Equal(t, io.EOF, r.Read(&m))
	}
}
