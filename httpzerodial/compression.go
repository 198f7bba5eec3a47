package httpzerodial

import (
	"compress/gzip"
	"fmt"
	"io"
	"sync/atomic"

	"connectrpc.com/connect"
)

// gzipCompression is the Handler's "gzip": connect-go's own compressor,
// and a decompressor that yields at most readMax bytes of a message, and
// refuses it at the byte after (limitedGzip). inflated, when not nil,
// counts the bytes its decompressors yield.
func gzipCompression(readMax int, inflated *atomic.Int64) connect.HandlerOption {
	return connect.WithCompression("gzip",
		func() connect.Decompressor { return newLimitedGzip(int64(readMax), inflated) },
		// connect-go's default compressor; connect-go pools them.
		func() connect.Compressor { return gzip.NewWriter(io.Discard) },
	)
}

// limitedGzip is a gzip decompressor that yields at most limit bytes of a
// stream, and, when there is a byte after them, refuses the message with
// resource_exhausted (a *connect.Error, which connect-go passes on as it
// is). connect-go's decompression reads a message of up to the read limit
// and one byte more, to know it is too large, then reads the rest into
// nothing to say how large it was: for a gzip bomb (deflate's ratio is
// about 1000:1) that is a thousand times the request's size in inflate
// work. With limit the read limit, it stops at that byte: the limit and
// one byte come out of it, and the flate decompressor beneath inflates at
// most its window, 32 KiB, ahead of what it gives. TestLimitedGzip and
// TestCompressionBomb test it.
type limitedGzip struct {
	zr       gzip.Reader
	limit    int64         // bytes a stream may yield
	left     int64         // bytes this stream may yield still
	err      error         // the refusal, once a stream has passed the limit
	probe    [1]byte       // the byte after the limit
	inflated *atomic.Int64 // when not nil, counts the bytes yielded, for tests
}

func newLimitedGzip(limit int64, inflated *atomic.Int64) *limitedGzip {
	return &limitedGzip{limit: limit, left: limit, inflated: inflated}
}

// Read inflates into p, no further than the stream's limit and the byte
// that says it is passed.
func (d *limitedGzip) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if d.left == 0 {
		n, err := d.zr.Read(d.probe[:])
		d.count(n)
		if n == 0 {
			return 0, err // io.EOF: the message is the limit exactly
		}
		d.err = connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("httpzerodial: the message inflates to more than the read limit of %d bytes (inflating stopped one byte past it)", d.limit))
		return 0, d.err
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.zr.Read(p)
	d.left -= int64(n)
	d.count(n)
	return n, err
}

func (d *limitedGzip) count(n int) {
	if d.inflated != nil {
		d.inflated.Add(int64(n))
	}
}

// Close closes the gzip reader, not its source.
func (d *limitedGzip) Close() error { return d.zr.Close() }

// Reset starts a new stream from r, which may yield limit bytes again.
func (d *limitedGzip) Reset(r io.Reader) error {
	d.left, d.err = d.limit, nil
	return d.zr.Reset(r)
}
