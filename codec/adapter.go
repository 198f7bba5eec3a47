package codec

import (
	"errors"
	"io"

	"github.com/zerodial/transport"
)

// maxRetainedBody bounds the body buffer an adapter keeps between messages,
// so one large call does not pin its buffer for the life of the connection.
const maxRetainedBody = 64 << 10

// bodyWriter encodes the bodies one adapter sends. When the codec is an
// Appender it encodes into one buffer that it reuses for every message, since
// Send does not keep the body.
type bodyWriter struct {
	codec    Codec
	appender Appender // nil when codec cannot append
	buf      []byte
}

func newBodyWriter(c Codec) bodyWriter {
	a, _ := c.(Appender)
	return bodyWriter{codec: c, appender: a}
}

// marshal returns the encoding of v, valid until the next call.
func (w *bodyWriter) marshal(v any) ([]byte, error) {
	if w.appender == nil {
		return w.codec.Marshal(v)
	}
	b, err := w.appender.AppendMarshal(w.buf[:0], v)
	if err != nil {
		return nil, err
	}
	// Keep the grown buffer for the next message, unless it grew large.
	if cap(b) <= maxRetainedBody {
		w.buf = b[:0]
	}
	return b, nil
}

// releaseLarge drops m's body once it has been decoded if it is large, so
// that Recv does not keep reusing, and the connection does not pin, the
// buffer of one rare large message.
func releaseLarge(m *transport.Message) {
	if cap(m.Body) > maxRetainedBody {
		m.Body = nil
	}
}

// recvError turns the error from Recv into what net/rpc expects: it compares
// with io.EOF directly to tell a clean end from a failure, and reports a
// clean end after its own Close (as rpc.ErrShutdown on the client).
func recvError(err error, closed bool) error {
	if errors.Is(err, io.EOF) || (closed && errors.Is(err, transport.ErrClosed)) {
		return io.EOF
	}
	return err
}
