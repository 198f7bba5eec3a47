package dispatch

import (
	"context"
	"crypto/tls"
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/rpcwire"
)

// callDesc describes one call: what its caller asked for, and where it came
// from — what a handler is told of its call. It is built once on each
// side, and everything after reads it. The content type is not in it: it
// says how the body is encoded, which a handler sees decoded, and goes
// beside it (requestHeader's ctype, serverCall's codec).
//
// A Client builds it from the caller's context (fromContext) and writes it
// as a request's headers (requestHeader), or, on the shortcut, hands it to
// the handler's context with the listener as its peer. A Server builds it
// from what each path carries — the wire's headers (receivedHeader.desc),
// a foreign protocol's IncomingCall (incomingDesc), a net/rpc request
// (codecConn.start), which carries only the method — and every handler's
// context (callCtx) takes it: its metadata, its deadline and its CallInfo
// are the description's, so that they are the same on every path.
//
// A new per-call field is one field here, set in fromContext and read back
// in receivedHeader.desc, one header on the wire (requestHeader, rpcwire,
// requestKeys), and what CallInfo shows of it (info, and incomingDesc for
// what a foreign protocol says of it).
type callDesc struct {
	// name is the method called, "Service.Method".
	name string
	// md is the caller's metadata, nil when there is none (as the network
	// delivers it). It is never changed: WithMetadata makes a new map, and
	// MetadataFrom hands out copies.
	md Metadata
	// deadline is the caller's deadline, zero when it has none.
	deadline time.Time
	// peer is where the call came from, and the Server it came to, shared
	// by the calls of one connection; nil on a Client.
	peer *connInfo
}

// connInfo is where a handler's call came from, the part of its CallInfo
// that every call over one connection (or one shortcut entry, one foreign
// call) shares, found once per connection; and the Server it came to.
type connInfo struct {
	srv         *Server
	path        Path
	local, peer net.Addr
	tls         *tls.ConnectionState
	cred        *transport.PeerCred
}

// fromContext sets d, zero, to describe a call of name that a Client makes
// with ctx: the caller's metadata (WithMetadata) and deadline. It fills d
// in place, so that the shortcut's handler context, which holds it, is
// made without a copy.
func (d *callDesc) fromContext(ctx context.Context, name string) {
	d.name = name
	if md := outgoing(ctx); len(md) > 0 {
		d.md = md
	}
	d.deadline, _ = ctx.Deadline()
}

// incomingDesc describes a call that a protocol of another package read
// (Invoke, InvokeStream) from what it says of it, call, and the deadline
// of its context ctx, as info's inverse: where it came from, to srv, is
// set in *from, which the foreign call holds.
func incomingDesc(ctx context.Context, call IncomingCall, srv *Server, from *connInfo) callDesc {
	ci := &call.Info
	*from = connInfo{srv: srv, path: ci.Path, local: ci.LocalAddr, peer: ci.RemoteAddr, tls: ci.TLS, cred: ci.PeerCred}
	d := callDesc{name: ci.Method, peer: from}
	if len(call.Metadata) > 0 {
		d.md = maps.Clone(call.Metadata) // the protocol's map is its own
	}
	d.deadline, _ = ctx.Deadline()
	return d
}

// deadlineOf returns d's deadline as context.Context.Deadline does.
func (d *callDesc) deadlineOf() (time.Time, bool) { return d.deadline, !d.deadline.IsZero() }

// info is the CallInfo the handler of the call described sees.
func (d *callDesc) info() *CallInfo {
	ci := &CallInfo{Method: d.name}
	if p := d.peer; p != nil {
		ci.Path, ci.LocalAddr, ci.RemoteAddr, ci.TLS, ci.PeerCred = p.path, p.local, p.peer, p.tls, p.cred
	}
	return ci
}

// desc describes the call, or the stream, whose request headers rh holds,
// which came over a connection described by peer: the method, the
// metadata, and the deadline its Timeout sets, counted from now; timeout
// is that Timeout, for the timer that ends the call when d has a deadline.
// An ill-formed Timeout is refused.
func (rh *receivedHeader) desc(peer *connInfo) (d callDesc, timeout time.Duration, e *Error) {
	d = callDesc{name: rh.name, md: rh.metadata(), peer: peer}
	if t, ok := rh.get(rpcwire.Timeout); ok {
		var err error
		if timeout, err = rpcwire.ParseTimeout(t); err != nil {
			return d, 0, &Error{Code: CodeInvalidArgument, Message: "dispatch: ill-formed Timeout " + strconv.Quote(t)}
		}
		d.deadline = time.Now().Add(timeout)
	}
	return d, timeout, nil
}
