// Package deadlinerec records the read deadline set on a connection, so
// that a test can check what deadline code left in force (none, or one a
// minute away) by reading it, rather than by waiting to see whether a read
// times out — a wait that a loaded machine can stretch past any bound. It
// imports nothing of this module, so that the tests of the packages under
// internal/ that set deadlines (preface, netconn) can use it.
package deadlinerec

import (
	"net"
	"sync"
	"time"
)

// Conn is a net.Conn that records the read deadline last set on it, by
// SetDeadline or SetReadDeadline.
type Conn struct {
	net.Conn
	mu   sync.Mutex
	read time.Time
}

// SetDeadline records t as the read deadline and sets it.
func (c *Conn) SetDeadline(t time.Time) error {
	c.setRead(t)
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline records t as the read deadline and sets it.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.setRead(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *Conn) setRead(t time.Time) {
	c.mu.Lock()
	c.read = t
	c.mu.Unlock()
}

// ReadDeadline returns the read deadline in force: the zero time for none.
func (c *Conn) ReadDeadline() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read
}
