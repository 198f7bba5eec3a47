package httpzerodial

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"connectrpc.com/connect"
)

// requestBody is a request's body as connect-go reads it, bounded two
// ways connect-go's own reading is not:
//
//   - By the request's deadline (Connect-Timeout-Ms, grpc-timeout): the
//     read is given the deadline (http.ResponseController's
//     SetReadDeadline, which net/http's servers keep per request on
//     HTTP/1.1 and per stream on HTTP/2), so that a body that stalls is
//     answered with deadline_exceeded when the deadline passes, where
//     connect-go would wait for it as long as the client holds it.
//   - By the read limit, refused as soon as it is known to be passed: an
//     envelope (a Connect stream's, gRPC's, gRPC-Web's) that announces a
//     message over the limit is refused once its 5 bytes are read, and a
//     unary Connect call's body, which is its message, is read no further
//     than the limit and one byte more. connect-go reads such a message
//     whole, into nothing, to say how large it was.
//
// A refusal is a *connect.Error, which connect-go passes on to the client
// as it is.
type requestBody struct {
	body      io.ReadCloser
	w         http.ResponseWriter // for its ResponseController
	readMax   int64
	enveloped bool

	deadline time.Time // the request's, from deadlineGate; zero for none
	armed    bool      // the read has been given the deadline

	read int64 // of a body that is one message: the bytes read

	// Of enveloped messages: the prefix of the next message, the bytes of
	// it read and not yet handed on, and the bytes of the message still to
	// read.
	head    [5]byte
	pending []byte
	left    int64

	err error // returned once pending is handed on, and from then on
}

// bodyKey is the context key under which ServeHTTP leaves a request's
// requestBody for deadlineGate.
type bodyKey struct{}

// deadlineGate is a connect-go request gate: it runs once connect-go has
// read the request's timeout into ctx, before any of the body is read, and
// gives the body ctx's deadline.
func deadlineGate(ctx context.Context, _ connect.Spec, _ connect.Peer, _ http.Header) (context.Context, error) {
	if b, ok := ctx.Value(bodyKey{}).(*requestBody); ok {
		b.deadline, _ = ctx.Deadline()
	}
	return nil, nil
}

// Read reads the body, within the deadline and the limit.
func (b *requestBody) Read(p []byte) (int, error) {
	if !b.armed {
		b.armed = true
		if !b.deadline.IsZero() {
			// Unsupported only by a ResponseWriter wrapped without
			// Unwrap: the read then goes unbounded, as connect-go's does.
			_ = http.NewResponseController(b.w).SetReadDeadline(b.deadline)
		}
	}
	var n int
	var err error
	if b.enveloped {
		n, err = b.readEnveloped(p)
	} else {
		n, err = b.readMessage(p)
	}
	if err != nil && !b.deadline.IsZero() && errors.Is(err, os.ErrDeadlineExceeded) {
		err = connect.NewError(connect.CodeDeadlineExceeded, errors.New("httpzerodial: the request's deadline passed before its body had arrived"))
	}
	return n, err
}

// readMessage reads a body that is one message, up to the read limit; one
// byte more refuses it.
func (b *requestBody) readMessage(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.read == b.readMax {
		n, err := b.body.Read(p[:1])
		if n == 0 {
			return 0, err // io.EOF: the message is the limit exactly
		}
		b.err = connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("httpzerodial: the message is larger than the read limit of %d bytes (reading stopped one byte past it)", b.readMax))
		return 0, b.err
	}
	if int64(len(p)) > b.readMax-b.read {
		p = p[:b.readMax-b.read]
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	return n, err
}

// readEnveloped reads a body of enveloped messages: each prefix is read
// whole before any of it is handed on, so that one announcing a message
// over the read limit is refused before connect-go sees it.
func (b *requestBody) readEnveloped(p []byte) (int, error) {
	if len(b.pending) > 0 {
		n := copy(p, b.pending)
		b.pending = b.pending[n:]
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.left > 0 {
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
		n, err := b.body.Read(p)
		b.left -= int64(n)
		return n, err
	}
	n, err := io.ReadFull(b.body, b.head[:])
	switch {
	case n == 0:
		return 0, err // io.EOF between messages, or the body's failure
	case errors.Is(err, io.ErrUnexpectedEOF):
		b.err = io.EOF // connect-go sees a prefix cut short, as it would
	case err != nil:
		b.err = err
	default:
		size := int64(binary.BigEndian.Uint32(b.head[1:]))
		if size > b.readMax {
			b.err = connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("httpzerodial: a message of %d bytes (its envelope says) is larger than the read limit of %d bytes", size, b.readMax))
			return 0, b.err
		}
		b.left = size
	}
	b.pending = b.head[:n]
	return b.readEnveloped(p)
}

// Close closes the body.
func (b *requestBody) Close() error { return b.body.Close() }

// contentLengthError refuses at once a unary Connect call whose body, its
// message, is announced over the read limit.
func contentLengthError(length, readMax int64) error {
	return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("httpzerodial: the message's Content-Length, %d bytes, is larger than the read limit of %d bytes", length, readMax))
}
