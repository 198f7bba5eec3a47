package netconn

import (
	"context"
	"net"

	"github.com/zerodial/transport/internal/unixsock"
)

// Listen binds addr for a transport's listener: the socket path of a unix
// address ("unix:PATH", docs/unix.md), a stale socket file replaced and a
// live listener's refused (unixsock.Listen); a TCP host:port otherwise.
func Listen(addr string) (net.Listener, error) {
	if p, ok := unixsock.Path(addr); ok {
		return unixsock.Listen(p)
	}
	return net.Listen("tcp", addr)
}

// Dial connects to addr with dial: network "unix" and the path for a unix
// address, "tcp" and addr otherwise. Its error is DialError's.
func Dial(ctx context.Context, dial unixsock.DialFunc, addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if p, ok := unixsock.Path(addr); ok {
		c, err = unixsock.Dial(ctx, dial, p)
	} else {
		c, err = dial(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, DialError(ctx, err)
	}
	return c, nil
}
