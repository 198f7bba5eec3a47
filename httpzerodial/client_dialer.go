package httpzerodial

import (
	"context"
	"net"
	"sync"
)

// connDialer dials the connections of an httpConn's own transports, and
// closes them all, and refuses more, when the httpConn closes: so that
// Close ends the unary calls in flight, which then need no context of
// their own for it (a context.WithCancel and a context.AfterFunc of the
// connection's cost a call six allocations).
type connDialer struct {
	// done is the httpConn's context, which its Close ends: a dial then in
	// progress ends too, as its connection is not in conns yet and net/http
	// dials apart from the request's context (a host that drops SYNs held
	// a call past Close until the system's connect timeout).
	done   context.Context
	d      net.Dialer
	mu     sync.Mutex
	conns  map[*dialedConn]struct{}
	closed bool
}

func (d *connDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.done, cancel)()
	c, err := d.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	dc := &dialedConn{Conn: c, d: d}
	if d.conns == nil {
		d.conns = make(map[*dialedConn]struct{})
	}
	d.conns[dc] = struct{}{}
	return dc, nil
}

// close closes every connection dialled, and refuses more.
func (d *connDialer) close() {
	d.mu.Lock()
	d.closed = true
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

// dialedConn is a connection of a connDialer, which forgets it once
// closed.
type dialedConn struct {
	net.Conn
	d *connDialer
}

func (c *dialedConn) Close() error {
	c.d.mu.Lock()
	delete(c.d.conns, c)
	c.d.mu.Unlock()
	return c.Conn.Close()
}
