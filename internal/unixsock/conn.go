package unixsock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/zerodial/transport"
)

// Conn is one end of a unix socket connection, as this package's dial and
// listener make it: a *net.UnixConn whose addresses are Addrs, and which
// knows its peer's credentials, read once when it was made.
type Conn struct {
	*net.UnixConn
	local, remote Addr
	cred          transport.PeerCred
	credOK        bool
}

func newConn(c *net.UnixConn, remote Addr) *Conn {
	uc := &Conn{UnixConn: c, local: addrOf(c.LocalAddr()), remote: remote}
	uc.cred, uc.credOK = peerCred(c)
	return uc
}

// LocalAddr returns this end's address.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's address: the path dialled, for a dialling
// end; usually the unnamed "unix:" for an accepted one.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// PeerCred returns the peer's credentials as the kernel reported them when
// the connection was made; false where the system does not report them
// (every system but Linux, so far).
func (c *Conn) PeerCred() (transport.PeerCred, bool) { return c.cred, c.credOK }

// DialFunc opens a connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dial connects to the socket at path with dial (network "unix"). A
// connection that is not a *net.UnixConn (a caller's dial function may
// return anything) is returned as it is.
func Dial(ctx context.Context, dial DialFunc, path string) (net.Conn, error) {
	c, err := dial(ctx, "unix", path)
	if err != nil {
		return nil, tooLong(path, err)
	}
	if uc, ok := c.(*net.UnixConn); ok {
		return newConn(uc, AddrOf(path)), nil
	}
	return c, nil
}

// Absent reports whether err says that nobody listens at a socket path:
// no such file (the listener closed and removed it, or never began), or a
// file with no listener behind it.
func Absent(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// Raw reports whether c is a raw stream socket of the system — TCP or
// unix, as this package's Conn — where a write that wrote nothing leaves
// the stream as it was, and net.Buffers is written with one writev. Over
// TLS, yamux or a pipe it is false.
func Raw(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn, *Conn:
		return true
	}
	return false
}

// CredOf returns the peer credentials of c, a *Conn or a TLS connection
// (anything with a NetConn method) over one; false for any other
// connection, and where the system does not report them.
func CredOf(c net.Conn) (transport.PeerCred, bool) {
	for range 4 { // a TLS connection over a wrapper over a Conn, at most
		switch x := c.(type) {
		case *Conn:
			return x.PeerCred()
		case *net.UnixConn:
			return peerCred(x)
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return transport.PeerCred{}, false
		}
	}
	return transport.PeerCred{}, false
}

// maxPath is the longest socket path the system takes: sun_path's size,
// less its terminating zero (107 bytes on Linux, 103 on the BSDs).
var maxPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// tooLong says why a path over maxPath failed, where the system says only
// "invalid argument".
func tooLong(path string, err error) error {
	if err != nil && len(path) > maxPath && errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("%w (a unix socket path has at most %d bytes; %s has %d)", err, maxPath, path, len(path))
	}
	return err
}

// errNotSocket refuses to replace a file that is not a socket.
var errNotSocket = errors.New("the file exists and is not a socket: remove it or choose another path")

func pathErr(op, path string, err error) error {
	return fmt.Errorf("unix socket %s %s: %w", op, path, err)
}
