// Package unixsock is how the tcp and mux transports run over unix
// sockets: the address form ("unix:PATH", described once, in docs/unix.md),
// a listener that handles a stale socket file, a dial, and the peer's
// credentials. A connection of either end is a *Conn, whose addresses are
// in the form Dial accepts.
package unixsock

import (
	"net"
	"strings"
)

// Prefix starts every unix socket address: "unix:/run/app.sock".
const Prefix = "unix:"

// Path returns the socket path of a unix address ("unix:PATH"), and
// whether addr is one. What follows the prefix must not be empty, nor a
// port number alone: "unix:7000" is the host "unix" and the port 7000, as
// net.Dial reads it; a socket file named 7000 is "unix:./7000".
func Path(addr string) (string, bool) {
	p, ok := strings.CutPrefix(addr, Prefix)
	if !ok || p == "" || isPort(p) {
		return "", false
	}
	return p, true
}

// Is reports whether addr is a unix socket address.
func Is(addr string) bool {
	_, ok := Path(addr)
	return ok
}

func isPort(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Addr is the address of one end of a unix socket, in the form Dial
// accepts: String is "unix:" and the path. An unnamed end (a dialling
// client's, usually) has an empty path, and the String "unix:".
type Addr struct{ path string }

// AddrOf returns the Addr of the socket path p; "@" and "" (which Linux
// reports for an unnamed end) are the unnamed Addr.
func AddrOf(p string) Addr {
	if p == "@" {
		p = ""
	}
	return Addr{p}
}

func addrOf(a net.Addr) Addr {
	if ua, ok := a.(*net.UnixAddr); ok && ua != nil {
		return AddrOf(ua.Name)
	}
	return Addr{}
}

// Network returns "unix".
func (a Addr) Network() string { return "unix" }

// String returns the address in the form Dial accepts: "unix:PATH".
func (a Addr) String() string { return Prefix + a.path }

// Path returns the socket path, "" for an unnamed end.
func (a Addr) Path() string { return a.path }
