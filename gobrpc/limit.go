package gobrpc

import (
	"bufio"
	"fmt"
	"io"

	"github.com/zerodial/transport"
)

// MessageTooLargeError reports a gob message whose byte count is over the
// codec's limit (DefaultMaxMessage or WithMaxMessage). None of the message's
// bytes were read.
type MessageTooLargeError struct {
	Size  uint64 // the byte count the peer sent
	Limit uint64 // the codec's limit
}

// Error says "gobrpc: message of Size bytes, limit Limit".
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("gobrpc: message of %d bytes, limit %d", e.Size, e.Limit)
}

// Is makes errors.Is(err, transport.ErrFrameTooLarge) hold, as it does for
// a zerodial frame over its limit: a program that checks for a message too
// large finds it whichever wire it came over.
func (e *MessageTooLargeError) Is(target error) bool { return target == transport.ErrFrameTooLarge }

// limitReader stands between a connection and a gob.Decoder and follows
// gob's framing itself — a count (one byte under 128, or a byte holding
// minus the length of a big-endian number, then the number) and that many
// bytes — so that a count over the limit fails before gob allocates for it
// or reads a byte of it. Every byte passes through unchanged. The first error
// is kept: after a failed read the decoder's position in the stream is lost.
// It is an io.ByteReader, so gob does not add a buffer of its own on top.
type limitReader struct {
	r     *bufio.Reader
	limit uint64
	left  uint64  // bytes of the current message not yet passed on
	count [9]byte // the current count as sent, passed on before the message
	ci    int     // count[ci:cn] not yet passed on
	cn    int
	err   error
}

func newLimitReader(r io.Reader, limit uint64) *limitReader {
	return &limitReader{r: bufio.NewReader(r), limit: limit}
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if l.ci == l.cn && l.left == 0 {
		if err := l.readCount(); err != nil {
			l.err = err
			return 0, err
		}
	}
	if l.ci < l.cn {
		n := copy(p, l.count[l.ci:l.cn])
		l.ci += n
		return n, nil
	}
	if uint64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= uint64(n)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		l.err = err
	}
	return n, err
}

// ReadByte makes limitReader an io.ByteReader.
func (l *limitReader) ReadByte() (byte, error) {
	var b [1]byte
	n, err := l.Read(b[:])
	if n == 1 {
		return b[0], nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return 0, err
}

// readCount reads the next message's count into l.count and l.left. The end
// of the stream before a count is io.EOF, as gob reports it; within one,
// io.ErrUnexpectedEOF.
func (l *limitReader) readCount() error {
	b, err := l.r.ReadByte()
	if err != nil {
		return err
	}
	l.count[0] = b
	l.ci, l.cn = 0, 1
	if b <= 0x7f {
		l.left = uint64(b)
	} else {
		n := -int(int8(b))
		if n > 8 {
			return fmt.Errorf("gobrpc: message count of %d bytes, at most 8", n)
		}
		if _, err := io.ReadFull(l.r, l.count[1:1+n]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		l.cn = 1 + n
		var x uint64
		for _, c := range l.count[1 : 1+n] {
			x = x<<8 | uint64(c)
		}
		l.left = x
	}
	if l.left > l.limit {
		return &MessageTooLargeError{Size: l.left, Limit: l.limit}
	}
	return nil
}
