// Package transport defines how zerodial moves messages: the Message, the
// Socket that carries them, the Listener that accepts Sockets and the
// Transport that makes both. It holds interfaces, the Message type, errors
// and the wire's frame limits only; the implementations live in the memory,
// tcp and mux packages, each with the options that apply to it, and the
// transporttest package checks that an implementation keeps the contract
// written here.
//
// Every transport gives the same observable behaviour — the same errors,
// the same ownership rules, the same limits — so code written against these
// interfaces does not change when the transport does.
package transport

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// Message is the unit a Socket carries: a small set of string headers and an
// opaque body.
//
// Ownership: Send does not keep m. When Send returns, the transport has copied
// or written everything it needs, and the caller may reuse or change m.Header
// and m.Body at once.
//
// Recv fills the Message it is given and may reuse its storage: it clears and
// refills m.Header if that map is not nil, and it may write the body into the
// array behind m.Body or replace m.Body with a buffer of its own. After Recv
// returns, m.Header and m.Body belong to the caller alone — no other Socket or
// goroutine refers to them — until the caller passes m to Recv again. A caller
// that keeps the body (or the header map) past that point must copy it, or set
// the field to nil before the next Recv.
type Message struct {
	// Header holds the message's metadata. Keys and values are arbitrary
	// UTF-8 or binary strings; a nil map and an empty map are the same.
	Header map[string]string
	// Body is the payload. A nil body and an empty body are the same.
	Body []byte
}

// Socket is one bidirectional, message-oriented connection.
//
// Send and Recv may be called from many goroutines at once: each message is
// sent or received whole, and messages never interleave. Messages sent from
// one goroutine arrive in the order they were sent.
//
// Errors: after the local Close, Send and Recv return an error matching
// ErrClosed. When the peer has closed, Recv returns io.EOF once every message
// it sent has been received, and Send fails (on a network, possibly only after
// a few messages have been buffered). When a deadline passes, Send and Recv
// return an error matching ErrTimeout (a net.Error whose Timeout method
// reports true); a Recv that timed out before any part of a message arrived
// leaves the Socket usable once the deadline is moved or cleared. A message
// larger than the transport's limit fails with ErrFrameTooLarge. Any error
// that leaves the stream in an unknown state (a write timing out half way, a
// malformed frame) also closes the Socket.
type Socket interface {
	// Send transmits m. See Message for who owns m afterwards.
	Send(m *Message) error
	// Recv receives the next message into m. See Message for ownership.
	Recv(m *Message) error
	// Close closes the socket. Blocked Send and Recv calls on both ends
	// return. Close is idempotent.
	Close() error
	// LocalAddr returns the local end's address.
	LocalAddr() net.Addr
	// RemoteAddr returns the remote end's address.
	RemoteAddr() net.Addr
	// SetDeadline sets both the read and the write deadline, as
	// net.Conn.SetDeadline does. The zero time means no deadline.
	SetDeadline(t time.Time) error
	// SetReadDeadline sets the deadline for Recv calls, pending or future.
	SetReadDeadline(t time.Time) error
	// SetWriteDeadline sets the deadline for Send calls, pending or future.
	SetWriteDeadline(t time.Time) error
}

// AsyncSender is a Socket that can take a message to write soon and return
// at once, so that messages sent one after another while a write is under
// way go out together, in one write: what makes a stream of small messages
// cost about what its bytes cost rather than a system call each. Messages
// sent with Send and SendAsync go out in the order of the calls. m may be
// reused when SendAsync returns. A message over the frame limit fails at
// once with ErrFrameTooLarge; a later failure of the write closes the
// Socket, and Recv then reports it. The caller bounds what it sends this
// way (dispatch's streams by their windows): the Socket holds it all.
type AsyncSender interface {
	SendAsync(m *Message) error
}

// BatchSender is a Socket whose senders can share writes, so that many
// callers sending small messages at once make one system call between
// them rather than one each. Queue copies m and returns; when no write is
// under way it reports flush, and the caller must then call Flush, which
// writes m together with whatever other senders queued meanwhile. A message
// queued behind a write under way goes out with that write's next batch.
// Between the two calls the caller holds none of its own locks, which is
// what lets the next sender's message join the write. Messages sent with
// Send, SendAsync and Queue go out in the order of the calls.
//
// Queue fails at once with ErrFrameTooLarge for a message over the frame
// limit (the Socket goes on), and waits when a bounded amount is queued
// already. Flush returns the error of the write that held the caller's
// message; any failed write closes the Socket, and Recv then reports it.
// When ctx ends while Flush writes, a write that the peer does not take
// soon after (a peer that stopped reading) is interrupted, the Socket
// closed, and Flush returns an error matching ErrTimeout; a peer that
// reads is given the time to take it, so that a context ending does not
// close the Socket under its other senders.
type BatchSender interface {
	Queue(m *Message) (flush bool, err error)
	Flush(ctx context.Context) error
}

// FrameWaiter is a Socket that can wait for the next message to begin
// arriving without taking any of it. A read deadline that passes while
// WaitFrame waits ends it with an error matching ErrTimeout and leaves the
// Socket as it was, so that a reader can be interrupted between messages,
// never part way through one. Other errors are those Recv would return.
type FrameWaiter interface {
	WaitFrame() error
}

// Listener yields the Sockets that peers dial.
type Listener interface {
	// Accept waits for and returns the next Socket. After Close it returns an
	// error matching ErrClosed.
	Accept() (Socket, error)
	// Close stops listening at once: the address is free again as soon as
	// Close returns, pending Accept calls return, and sockets dialled but not
	// yet accepted are closed. Sockets already accepted stay open.
	Close() error
	// Addr returns the address the listener is bound to, in the form Dial
	// accepts.
	Addr() net.Addr
}

// Transport makes Sockets by dialling and Listeners by listening.
//
// Close is part of the interface, not an ability found by a type assertion
// (as FrameLimiter is): every transport holds something for what it dialled
// (mux its sessions and their goroutines, tcp and memory their sockets), so
// whoever holds a Transport, from an option or from mux.Back, can release
// it, and a wrapper that forgot to pass Close on would not compile rather
// than leak. A Transport that holds nothing still says, by failing Dial
// after Close, that it is done.
type Transport interface {
	// Dial connects to addr. It returns when the connection is ready, when it
	// fails (an error matching ErrConnectionRefused when nobody listens on
	// addr), or when ctx is done (an error matching ctx.Err()).
	Dial(ctx context.Context, addr string) (Socket, error)
	// Listen binds addr. An empty address, or a port of 0, picks a free one;
	// Listener.Addr reports what was picked.
	Listen(addr string) (Listener, error)
	// String names the transport ("memory", "tcp", "mux").
	String() string
	// Close closes every Socket this Transport dialled that is still open:
	// their Send and Recv fail with an error matching ErrClosed, and their
	// peers see the connection end, as if each had been closed. Dial fails
	// with an error matching ErrClosed afterwards. Listeners are not
	// affected: they, and the Sockets they accepted, serve on until closed
	// on their own. Close is idempotent and leaves no goroutine behind.
	Close() error
}

// FrameLimiter is implemented by transports, and by their listeners, that
// bound the size of one message. A Message whose encoded size (see WIRE.md: the header block plus
// the body) exceeds the limit fails with ErrFrameTooLarge.
type FrameLimiter interface {
	MaxFrameSize() int
}

// AddrSpacer is implemented by a Transport, and by the addresses its
// listeners report, when its addresses are not shared by the whole process:
// two memory Transports may each have a listener named "svc". AddrSpace
// returns a comparable value naming the address space; an address is the
// same place only within one space. Transports without it share the
// process-wide space of the host's network.
type AddrSpacer interface {
	AddrSpace() any
}

// ClosedReporter is implemented by Listeners that can tell, without
// blocking, whether Close has been called. dispatch uses it to stop routing
// in-process calls to a listener's address the moment the listener closes.
type ClosedReporter interface {
	Closed() bool
}

// Wire describes what a transport speaks on a connection, as far as it
// decides whether a connection can be made at all: the framing protocol and
// its version, and the TLS settings a handshake would test. dispatch compares
// a client transport's Wire with a listener's before it calls a Server of
// this process directly, so that the in-process shortcut refuses what the
// network would refuse.
type Wire struct {
	// Protocol names the framing and its version, as the connection
	// preface carries them (WIRE.md): "tcp/1", "mux/1"; "memory" for the
	// memory transport. Empty means unknown.
	Protocol string
	// TLS says whether connections are TLS.
	TLS bool
	// ClientCert: for a listener, that it requires a client certificate
	// (tls.RequireAnyClientCert or stricter); for a transport, that it has
	// one to present (tls.Config.Certificates or GetClientCertificate).
	ClientCert bool
}

// Accepts reports whether a listener speaking l accepts a connection from a
// transport speaking c, as far as can be told without a handshake: a known
// protocol, the same on both ends, TLS on both ends or on neither, and a
// client certificate where the listener requires one. An unknown Protocol
// (the zero Wire) accepts and is accepted by nothing. Certificate
// verification itself is not emulated.
func (l Wire) Accepts(c Wire) bool {
	return l.Protocol != "" && l.Protocol == c.Protocol && l.TLS == c.TLS && (!l.ClientCert || c.ClientCert)
}

// WireReporter is implemented by Transports and their Listeners that can say
// what they speak (see Wire). A wrapper around a Transport or Listener should
// pass it on, as it should AddrSpacer: without it, on either end, dispatch's
// shortcut cannot tell that the two ends would agree, and uses the network.
type WireReporter interface {
	Wire() Wire
}

// TLSReporter is implemented by Sockets that may run over TLS. TLS returns
// the connection's state once its handshake is done — the peer's
// certificates, verified as the configuration required — and false when
// the Socket does not run over TLS. dispatch gives it to handlers
// (dispatch.CallInfoFrom), so that they can authorise a caller by its
// certificate. A wrapper around a Socket should pass it on.
type TLSReporter interface {
	TLS() (tls.ConnectionState, bool)
}

// PeerCred is the identity of the process at the other end of a unix
// socket, as the kernel reported it when the connection was made
// (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS and FreeBSD): its
// user, group and process ids.
type PeerCred struct {
	UID, GID, PID int
}

// PeerCredReporter is implemented by Sockets that may run over a unix
// socket (tcp's and mux's, given a "unix:" address: docs/unix.md).
// PeerCred returns the peer's credentials, and false when the Socket does
// not run over a unix socket or the system does not report them (Linux,
// macOS and FreeBSD do, so far). dispatch gives them to handlers
// (dispatch.CallInfoFrom), so that they can authorise a caller by its user
// as they can by its TLS certificate. A wrapper around a Socket should
// pass it on.
type PeerCredReporter interface {
	PeerCred() (PeerCred, bool)
}
