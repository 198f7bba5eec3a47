package conntest

import (
	"bytes"
	"fmt"
	"net"
	"sync/atomic"
)

// JSONText returns n bytes of JSON-like text, which compresses well: the
// body the tcp and mux compression tests send.
func JSONText(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d","active":%t},`, i, i*7919%10007, i%3 == 0)
	}
	return b.Bytes()[:n]
}

// CountingConn counts the bytes written to the connection it wraps, so
// that a test sees what crossed the wire.
type CountingConn struct {
	net.Conn
	n atomic.Int64
}

// Written reports the bytes written so far.
func (c *CountingConn) Written() int64 { return c.n.Load() }

func (c *CountingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}
