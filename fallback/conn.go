package fallback

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// conn is a connection whose first bytes were read to tell its kind: Read
// returns them first, then the connection's own. Every other method is the
// connection's.
type conn struct {
	net.Conn
	kind Kind

	mu  sync.Mutex
	buf []byte // read already, not yet returned by Read
}

// Read returns the bytes read to classify the connection, then reads the
// connection. Once the replayed bytes are gone it is the connection's own
// Read, with nothing in between.
func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		if len(c.buf) == 0 {
			c.buf = nil
		}
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

// NetConn returns the connection c replays the first bytes of (a
// *tls.Conn, on a TLS listener), as tls.Conn's NetConn does: to reach what
// net.Conn does not say, such as a TLS connection's ConnectionState. Reading
// from it directly skips the replayed bytes.
func (c *conn) NetConn() net.Conn { return c.Conn }

// ErrUndecided is Sniff's error when the connection ended, or its deadline
// passed, before its first bytes said what it speaks (a client that sent
// "P" and stopped may be about to send "POST " or "PUT "): such a
// connection is dropped, not guessed at.
var ErrUndecided = errors.New("fallback: the connection's kind was not known before it stopped sending")

// Sniff reads c's first bytes, after read (bytes read from c already,
// which it keeps), until Classify decides their kind, and returns a
// connection whose Read replays every byte read before c's own, with the
// kind, which KindOf then reports. It sets no deadline: c's bounds the wait,
// so a caller that has none sets one. It reads at most PrefixLen bytes in
// all, and none when read already decides, or when c is a TLS connection
// whose client negotiated a protocol by ALPN (c is then returned as it
// is). A c that Sniff returned already, with read empty, is returned as it
// is.
//
// On error, an error matching ErrUndecided when c ended or timed out first
// (wrapping the read's error too), c is left for the caller to close.
func Sniff(c net.Conn, read []byte) (net.Conn, Kind, error) {
	if len(read) == 0 {
		switch cc := c.(type) {
		case *conn:
			return c, cc.kind, nil
		case *tls.Conn:
			if k, ok := alpnKind(cc); ok {
				return c, k, nil
			}
		}
	}
	buf := make([]byte, max(PrefixLen, len(read)))
	n := copy(buf, read)
	k, decided := Classify(buf[:n])
	for empty := 0; !decided; {
		m, err := c.Read(buf[n:PrefixLen])
		n += m
		if m == 0 && err == nil {
			// A Read that returns nothing and no error, again and
			// again, would spin here for ever.
			if empty++; empty == 100 {
				err = io.ErrNoProgress
			}
		}
		if k, decided = Classify(buf[:n]); decided {
			break
		}
		if err != nil {
			if errors.Is(err, io.EOF) && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, Unknown, fmt.Errorf("%w (it sent %q): %w", ErrUndecided, buf[:n], err)
		}
	}
	return &conn{Conn: c, kind: k, buf: buf[:n:n]}, k, nil
}
