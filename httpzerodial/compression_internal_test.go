package httpzerodial

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"

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
// and of a longer one the limit, then errInflateLimit; Reset gives a new
// stream the whole limit again; the counter counts what it yields.
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
			} else {
				require.ErrorIs(t, err, errInflateLimit, "a stream of %d", n)
				assert.Equal(t, data[:limit], got, "a stream of %d", n)
				_, err = d.Read(make([]byte, 1))
				assert.ErrorIs(t, err, errInflateLimit, "a stream of %d, read again", n)
			}
			assert.Equal(t, int64(min(n, limit)), inflated.Load(), "bytes counted of a stream of %d", n)
			require.NoError(t, d.Close())
		}
	}
}

// TestLimitedGzipAsConnect: read as connect-go's decompression reads a
// message (compressionPool.Decompress), with a limitedGzip's limit the
// read limit and one byte: up to the read limit and one byte through an
// io.LimitReader, without error, and then, when there was that byte, the
// rest into io.Discard, which ends at once in errInflateLimit.
func TestLimitedGzipAsConnect(t *testing.T) {
	const readMax = 1 << 16
	d := newLimitedGzip(readMax+1, nil)
	for _, n := range []int{readMax, readMax + 1, 64 << 20} {
		require.NoError(t, d.Reset(bytes.NewReader(gzipOf(t, make([]byte, n)))))
		var dst bytes.Buffer
		read, err := dst.ReadFrom(io.LimitReader(d, readMax+1))
		require.NoError(t, err, "a message of %d", n)
		if n <= readMax {
			assert.Equal(t, int64(n), read)
			continue
		}
		assert.Equal(t, int64(readMax+1), read, "a message of %d", n)
		discarded, err := io.Copy(io.Discard, d)
		assert.ErrorIs(t, err, errInflateLimit, "a message of %d", n)
		assert.Zero(t, discarded, "a message of %d", n)
	}
}
