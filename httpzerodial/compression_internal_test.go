package httpzerodial

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gzipOf returns data compressed with gzip.
func gzipOf(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestLimitedGzip: a limitedGzip yields a stream of up to its limit whole,
// and of a longer one the limit, then refuses it with resource_exhausted
// having inflated one byte more, and goes on refusing; Reset gives a new
// stream the whole limit again; the counter counts what it inflates.
func TestLimitedGzip(t *testing.T) {
	const limit = 10_000
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4*limit)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var inflated atomic.Int64
	d := newLimitedGzip(limit, &inflated)
	for _, data := range map[string][]byte{"zeros": make([]byte, 1<<20), "random": random} {
		for _, n := range []int{0, 1, limit - 1, limit, limit + 1, 2 * limit, len(data)} {
			inflated.Store(0)
			require.NoError(t, d.Reset(bytes.NewReader(gzipOf(t, data[:n]))))
			got, err := io.ReadAll(d)
			if n <= limit {
				require.NoError(t, err, "a stream of %d", n)
				assert.Equal(t, data[:n], got, "a stream of %d", n)
				assert.Equal(t, int64(n), inflated.Load(), "bytes counted of a stream of %d", n)
			} else {
				assert.Equal(t, connect.CodeResourceExhausted, connect.CodeOf(err), "a stream of %d: %v", n, err)
				assert.EqualError(t, err, "resource_exhausted: httpzerodial: the message inflates to more than the read limit of 10000 bytes (inflating stopped one byte past it)")
				assert.Equal(t, data[:limit], got, "a stream of %d", n)
				_, again := d.Read(make([]byte, 1))
				assert.Equal(t, err, again, "a stream of %d, read again", n)
				assert.Equal(t, int64(limit+1), inflated.Load(), "bytes counted of a stream of %d", n)
			}
			require.NoError(t, d.Close())
		}
	}
}

// TestLimitedGzipAsConnect: read as connect-go's decompression reads a
// message (compressionPool.Decompress), with a limitedGzip's limit the
// read limit: up to the read limit and one byte through an io.LimitReader,
// a message of the limit whole and without error, a longer one refused in
// that read, which connect-go then hands on as it is (a *connect.Error),
// never reaching the reading of the rest into io.Discard. The flate
// decompressor beneath inflates ahead of what it yields by its window, 32
// KiB, no more: what it takes of the compressed stream inflates to the
// limit, the byte after it and that window — and a little more, the few
// compressed bytes it has read ahead for their first bits, each of which
// may hold a thousand zeros.
func TestLimitedGzipAsConnect(t *testing.T) {
	const readMax = 1 << 16
	d := newLimitedGzip(readMax, nil)
	for _, n := range []int{readMax, readMax + 1, 64 << 20} {
		compressed := gzipOf(t, make([]byte, n))
		src := bytes.NewReader(compressed)
		require.NoError(t, d.Reset(src))
		var dst bytes.Buffer
		read, err := dst.ReadFrom(io.LimitReader(d, readMax+1))
		if n <= readMax {
			require.NoError(t, err, "a message of %d", n)
			assert.Equal(t, int64(n), read)
			continue
		}
		var ce *connect.Error
		require.ErrorAs(t, err, &ce, "a message of %d", n)
		assert.Equal(t, connect.CodeResourceExhausted, ce.Code())
		assert.Equal(t, int64(readMax), read, "a message of %d", n)

		taken := compressed[:len(compressed)-src.Len()]
		zr, err := gzip.NewReader(bytes.NewReader(taken))
		require.NoError(t, err)
		work, _ := io.Copy(io.Discard, zr) // the stream is cut short
		t.Logf("a message of %d: %d compressed bytes taken, which inflate to the limit and %d", n, len(taken), work-readMax)
		assert.LessOrEqual(t, work, int64(readMax+1+32<<10+1<<10), "a message of %d: bytes inflated", n)
	}
}
