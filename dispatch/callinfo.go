package dispatch

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync/atomic"

	"github.com/zerodial/transport"
)

// Path says which way a call went: the name of the transport that carried
// it — "memory", "tcp", "mux", or another transport's String() — or one of
// the shortcut's two ways. Metrics and logs label calls with it.
type Path string

// The shortcut's paths. A ShortcutDirect Client's calls to methods that do
// not borrow (Borrows) run as ShortcutCopy does, and report
// PathShortcutCopy.
const (
	// PathShortcutCopy is a call made on the shortcut in copy mode.
	PathShortcutCopy Path = "shortcut-copy"
	// PathShortcutDirect is a call made on the shortcut with the caller's
	// own values (ShortcutDirect, to a method that borrows).
	PathShortcutDirect Path = "shortcut-direct"
)

// IsShortcut reports whether p is one of the shortcut's paths.
func (p Path) IsShortcut() bool { return p == PathShortcutCopy || p == PathShortcutDirect }

// CallInfo describes one call, as either end sees it. CallInfoFrom returns
// it to interceptors, on both ends, and to handlers.
//
// The peer of a shortcut call is the process itself: no connection exists,
// so there is no handshake and no peer address. On the shortcut a handler
// sees RemoteAddr ShortcutAddr and LocalAddr the address of the listener
// the Client dialled, and TLS is nil even when the listener speaks TLS —
// the shortcut is taken only when the Client's transport is configured as
// the listener requires (TLS, a client certificate), but no certificate is
// presented or verified. A handler that authorises by certificate must
// decide what it grants its own process: a caller it can always trust,
// since it runs the caller's code, or nothing, by refusing the shortcut
// (Path.IsShortcut) or leaving WithShortcut off on the Clients.
type CallInfo struct {
	// Method is the method called, "Service.Method".
	Method string
	// Path is the way the call went. In a Client's interceptor, before
	// next is called, it is the way the Client means to take; the Client
	// corrects it if the call goes another way (a Server that stopped
	// serving meanwhile sends a shortcut call to the network).
	Path Path
	// LocalAddr is this end's address: on a Server, the connection's local
	// address, or on the shortcut the listener's; on a Client, nil.
	LocalAddr net.Addr
	// RemoteAddr is the other end's: on a Server, the connection's remote
	// address, or ShortcutAddr; on a Client, the address dialled (its
	// Network is the transport's name).
	RemoteAddr net.Addr
	// TLS is a Server's view of the connection's TLS state — the peer's
	// certificates, verified as the listener's configuration requires —
	// when the connection is TLS and the transport reports it
	// (transport.TLSReporter); nil otherwise, on a Client, and on the
	// shortcut.
	TLS *tls.ConnectionState
	// PeerCred is a Server's view of the calling process, when the
	// connection is a unix socket and the system reports its credentials
	// (transport.PeerCredReporter; Linux, macOS and FreeBSD so far,
	// docs/unix.md): its user, group and process ids, as the kernel gave
	// them when it connected. nil otherwise, on a Client, and on the
	// shortcut and memory paths, which have no connection for the kernel
	// to vouch for.
	PeerCred *transport.PeerCred
}

// ShortcutAddr is the remote address of a shortcut call, as its handler
// sees it: the calling process, which is this one.
var ShortcutAddr net.Addr = shortcutAddr{}

type shortcutAddr struct{}

func (shortcutAddr) Network() string { return "shortcut" }
func (shortcutAddr) String() string  { return "shortcut" }

// dialAddr is a Client's RemoteAddr: the address it dials, on its
// transport.
type dialAddr struct{ network, addr string }

func (a dialAddr) Network() string { return a.network }
func (a dialAddr) String() string  { return a.addr }

type callInfoKey struct{}

// CallInfoFrom returns the call's CallInfo from the context of a handler, of
// a Server's interceptor, or of a Client's interceptor; false for any other
// context.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	if ci, ok := ctx.Value(callInfoKey{}).(*CallInfo); ok && ci != nil {
		return *ci, true
	}
	return CallInfo{}, false
}

// callExtra is what a handler's context holds only for calls that use it:
// its CallInfo, made when first asked for, and the reply's metadata. It is
// allocated on first use, so that a call that uses neither pays one
// pointer for them.
type callExtra struct {
	info atomic.Pointer[CallInfo]
	// replyMD is the reply's metadata (SetReplyMetadata) and sealed says
	// the reply is being sent, after which no more is taken; both under
	// the callCtx's mu.
	replyMD Metadata
	sealed  bool
}

// sealedEmpty marks the reply of a call that set no metadata as sent,
// without allocating a callExtra for it. It is never written.
var sealedEmpty = &callExtra{sealed: true}

// extra returns c's callExtra, making it if need be; sealedEmpty once the
// reply of a call without metadata is sent.
func (c *callCtx) extra() *callExtra {
	if e := c.ext.Load(); e != nil {
		return e
	}
	c.ext.CompareAndSwap(nil, new(callExtra))
	return c.ext.Load()
}

// callInfo returns the CallInfo of the call c describes, made once per call.
func (c *callCtx) callInfo() *CallInfo {
	e := c.extra()
	if e == sealedEmpty {
		return c.info() // the call has ended: nothing more is kept
	}
	if ci := e.info.Load(); ci != nil {
		return ci
	}
	e.info.CompareAndSwap(nil, c.info())
	return e.info.Load()
}

// newConnInfo describes sock, accepted from a listener speaking wire (zero
// for ServeSocket's sockets).
func newConnInfo(srv *Server, sock transport.Socket, wire transport.Wire) *connInfo {
	ci := &connInfo{srv: srv, path: pathOfWire(wire, sock), local: sock.LocalAddr(), peer: sock.RemoteAddr()}
	if tr, ok := sock.(transport.TLSReporter); ok {
		if st, ok := tr.TLS(); ok {
			ci.tls = &st
		}
	}
	if pr, ok := sock.(transport.PeerCredReporter); ok {
		if cred, ok := pr.PeerCred(); ok {
			ci.cred = &cred
		}
	}
	return ci
}

// pathOfWire names the transport of a connection: the protocol its
// listener speaks without the version ("tcp/1" is "tcp"), which is the
// transport's String() for this module's transports; for a socket of no
// known listener, the network of its local address.
func pathOfWire(w transport.Wire, sock transport.Socket) Path {
	if w.Protocol != "" {
		name, _, _ := strings.Cut(w.Protocol, "/")
		return Path(name)
	}
	if a := sock.LocalAddr(); a != nil {
		return Path(a.Network())
	}
	return ""
}
