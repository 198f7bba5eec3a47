package httpzerodial

import (
	"compress/gzip"
	"errors"
	"io"
	"sync/atomic"

	"connectrpc.com/connect"
)

// errInflateLimit ends the inflation of a message past the read limit.
// connect-go, having read the limit and one byte more, reads on to learn
// the message's size; this error stops it there, and it refuses the
// message with resource_exhausted all the same, saying that the size is
// unknown.
var errInflateLimit = errors.New("httpzerodial: inflating stopped past the read limit")

// gzipCompression is the Handler's "gzip": connect-go's own compressor,
// and a decompressor that yields at most readMax+1 bytes of a message
// (limitedGzip). inflated, when not nil, counts the bytes its
// decompressors yield.
func gzipCompression(readMax int, inflated *atomic.Int64) connect.HandlerOption {
	return connect.WithCompression("gzip",
		func() connect.Decompressor { return newLimitedGzip(int64(readMax)+1, inflated) },
		// connect-go's default compressor; connect-go pools them.
		func() connect.Compressor { return gzip.NewWriter(io.Discard) },
	)
}

// limitedGzip is a gzip decompressor that yields at most limit bytes of a
// stream, then errInflateLimit. connect-go's decompression reads a message
// of up to the read limit and one byte more, to know it is too large, then
// reads the rest into nothing to say how large it was: for a gzip bomb
// (deflate's ratio is about 1000:1) that is a thousand times the request's
// size in inflate work. With limit the read limit plus one, it stops right
// after that byte. TestLimitedGzip and TestCompressionBomb test it.
type limitedGzip struct {
	zr       gzip.Reader
	limit    int64         // bytes a stream may yield
	left     int64         // bytes this stream may yield still
	inflated *atomic.Int64 // when not nil, counts the bytes yielded, for tests
}

func newLimitedGzip(limit int64, inflated *atomic.Int64) *limitedGzip {
	return &limitedGzip{limit: limit, left: limit, inflated: inflated}
}

// Read inflates into p, no further than the stream's limit.
func (d *limitedGzip) Read(p []byte) (int, error) {
	if d.left <= 0 {
		return 0, errInflateLimit
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.zr.Read(p)
	d.left -= int64(n)
	if d.inflated != nil {
		d.inflated.Add(int64(n))
	}
	return n, err
}

// Close closes the gzip reader, not its source.
func (d *limitedGzip) Close() error { return d.zr.Close() }

// Reset starts a new stream from r, which may yield limit bytes again.
func (d *limitedGzip) Reset(r io.Reader) error {
	d.left = d.limit
	return d.zr.Reset(r)
}
