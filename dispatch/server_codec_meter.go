package dispatch

import (
	"fmt"
	"io"

	"github.com/zerodial/transport"
)

// requestMeter counts the bytes a net/rpc codec reads for one request, and
// refuses to read more than limit of them.
//
// It exists because a codec reads from a bare byte stream: nothing tells a
// Server a request's size before the codec has buffered it (encoding/json's
// Decoder holds a whole value, however large, before it decodes any of it),
// so the only place to bound what one request makes the Server hold, and to
// learn its size for WithMaxBytesPerConn, is under the codec, where its
// bytes come in. The zerodial wire has its frame header for this.
//
// The count is approximate by at most the codec's read-ahead buffer: bytes
// of the next request read ahead count for the one being read. One
// goroutine reads at a time (net/rpc's codecs are read by one), so the
// count needs no lock.
type requestMeter struct {
	r     io.Reader
	limit int64 // the most one request may read
	n     int64 // read since begin
	err   error // set once a request wanted more than limit: sticky
}

// begin starts counting a new request.
func (m *requestMeter) begin() { m.n = 0 }

// count returns the bytes read since begin.
func (m *requestMeter) count() int64 { return m.n }

// tooLarge returns the error that ended reading, if a request passed the
// limit.
func (m *requestMeter) tooLarge() error { return m.err }

// Read reads at most what is left of the limit of the request being read.
// Once a request has read all of it and wants more, this Read and every
// later one fail with transport.ErrFrameTooLarge (wrapped with the limit):
// the codec fails, and the connection ends, whatever it buffers.
func (m *requestMeter) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	left := m.limit - m.n
	if left <= 0 {
		m.err = fmt.Errorf("%w: a net/rpc request unfinished after %d bytes, limit %d", transport.ErrFrameTooLarge, m.limit, m.limit)
		return 0, m.err
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := m.r.Read(p)
	m.n += int64(n)
	return n, err
}
