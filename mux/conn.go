package mux

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/netconn"
	"github.com/zerodial/transport/internal/preface"
)

// NewClientConn runs the client end of one mux session over conn, a
// connection made some other way than by Dial: one end of a unix socket or
// of net.Pipe, a connection from a proxy or a pool. It exchanges the
// connection preface (WIRE.md, section 2) over conn and then runs yamux
// over it exactly as a session Dial connects does, so ClientConn.Dial opens
// streams that behave as Transport.Dial's do. The other end may be
// NewServerConn on the peer's end of conn, or a listener of Transport.Listen
// if conn reaches one.
//
// The exchange ends when ctx does, with an error matching ctx.Err(), and
// after the handshake timeout (10 s) at the latest; ctx does not bound the
// session after that. A peer that is not of this protocol and version — a
// tcp listener, another server, one that sends nothing — fails it with an
// error matching transport.ErrProtocol that says what the peer sent, as
// Transport.Dial's does, and WithLogger's logger hears of it. On failure
// conn is closed; on success it belongs to the ClientConn, which closes it.
//
// TLS is the caller's business: pass a *tls.Conn, whose handshake the
// first read or write completes (bounded like the exchange). WithTLS is
// refused rather than ignored, since a caller who passed it expects a
// connection it does not get; WithDialer has no connection to make and is
// ignored. The other options apply to the session as they do to a
// Transport's. Invalid options, WithTLS among them, fail NewClientConn
// before the exchange, all named in one error (errors.Join).
func NewClientConn(ctx context.Context, conn net.Conn, opts ...Option) (*ClientConn, error) {
	cfg, peer, err := connConfig("NewClientConn", conn, opts)
	if err != nil {
		conn.Close()
		return nil, err
	}
	t := fromConfig(cfg)
	// Client closes conn on failure. Without TLS it is the exchange alone.
	c, theirs, err := t.setup.Client(ctx, conn, peer)
	if err != nil {
		t.cfg.Logger.Log(ctx, prefaceLogLevel(err), "mux: NewClientConn failed", "side", "client", "remote", peer, "err", err)
		t.Close()
		return nil, err
	}
	cs := t.newClientSession(peer, func() {})
	sess, err := cs.start(c, theirs)
	if err != nil {
		t.Close()
		return nil, err
	}
	cs.sess = sess
	close(cs.ready)
	t.mu.Lock()
	t.all[cs] = struct{}{} // for Close
	t.mu.Unlock()
	// The peer may open streams too; Close waits for the loop.
	t.goTracked(cs.acceptStreams)
	return &ClientConn{t: t, cs: cs, remote: conn.RemoteAddr()}, nil
}

// ClientConn is the client end of one mux session over a connection the
// caller made (see NewClientConn). Dial opens a stream on the session, as
// Transport.Dial does, but a ClientConn has no address to reconnect to:
// once the session ends (the peer closed it or went away, keepalive
// failed) Dial fails, and continuing takes a new connection and a new
// ClientConn. Its methods may be called concurrently.
type ClientConn struct {
	// t holds the configuration and the one session, in t.all, so that
	// Close and the stream bookkeeping are the Transport's own.
	t      *Transport
	cs     *clientSession
	remote net.Addr
}

// Dial opens a stream on the session: a Socket that behaves as
// Transport.Dial's do, closed on its own by either end, failing with
// ErrSessionClosed if the session ends under it. Opening a stream costs no
// round trip; when the peer's accept backlog is full (or the stream limit
// reached) Dial waits, within ctx, for room. Once the session has ended,
// Dial fails with an error matching ErrSessionClosed, since there is no
// address to reconnect to; after Close, with one matching
// transport.ErrClosed.
func (cc *ClientConn) Dial(ctx context.Context) (transport.Socket, error) {
	peer := cc.cs.addr
	if err := ctx.Err(); err != nil {
		return nil, dialCtxErr(peer, err)
	}
	if cc.closed() {
		return nil, errClientConnClosed(peer)
	}
	c, err := cc.cs.open(ctx)
	var re *retireError
	switch {
	case err == nil:
		return newSocket(c, cc.t.cfg.Common), nil
	case cc.closed():
		return nil, errClientConnClosed(peer)
	case ctx.Err() != nil:
		return nil, dialCtxErr(peer, ctx.Err())
	case errors.As(err, &re):
		// No reconnecting: the session is all there is.
		return nil, fmt.Errorf("mux: dial %s: %w: %w", peer, ErrSessionClosed, re.cause)
	}
	return nil, fmt.Errorf("mux: dial %s: %w", peer, err)
}

func (cc *ClientConn) closed() bool {
	cc.t.mu.Lock()
	defer cc.t.mu.Unlock()
	return cc.t.closed
}

func errClientConnClosed(peer string) error {
	return fmt.Errorf("mux: dial %s: client conn closed: %w", peer, transport.ErrClosed)
}

// Close closes the session and its connection. Its streams, on both ends,
// fail: here with an error matching transport.ErrClosed and
// ErrSessionClosed, and the peer's Send and Recv with ErrSessionClosed, or
// the peer's Recv sees io.EOF once it has read what was sent, as for a
// Transport's session. Dial fails with transport.ErrClosed afterwards.
// Close waits for the goroutines of the ClientConn to end.
func (cc *ClientConn) Close() error { return cc.t.Close() }

// Incoming returns the Listener of the streams the peer opens on the
// session (with Back, on its end), as Transport.Incoming does for a
// Transport's sessions: serve it, with dispatch.Server.Serve or Start, to
// answer the peer's calls over the connection this end made. Every call
// returns the same Listener; Close closes it.
func (cc *ClientConn) Incoming() transport.Listener { return cc.t.Incoming() }

// RemoteAddr returns the remote address of the connection the session runs
// over, as its streams report it.
func (cc *ClientConn) RemoteAddr() net.Addr { return cc.remote }

// NewServerConn runs the server end of one mux session over conn, a
// connection accepted some other way than by Transport.Listen: one end of
// a unix socket or of net.Pipe, a connection a proxy or a listener of the
// caller's own handed over. It exchanges the connection preface (WIRE.md,
// section 2) and runs yamux over conn as a listener of Transport.Listen
// runs it for each connection it accepts, and returns a Listener whose
// Accept yields the streams the peer opens — NewClientConn's Dials, or
// Transport.Dial's if the peer dialled this end — so that a dispatch.Server
// can serve them as it serves a network listener.
//
// The exchange is bounded by ctx and the handshake timeout (10 s); a peer
// that is not of this protocol and version fails it with an error matching
// transport.ErrProtocol, and on failure conn is closed, as NewClientConn
// does. TLS is the caller's business, and WithTLS is refused, as for
// NewClientConn; the other options apply to the session as they do to a
// Transport's listener. Invalid options fail NewServerConn before the
// exchange, all named in one error.
//
// The Listener keeps the transport.Listener contract as far as one
// connection can. Its Addr is conn.LocalAddr(). Close makes Accept fail
// with transport.ErrClosed, pending Accepts included, and closes the
// streams not yet accepted; as with a Transport's listener, streams
// already accepted stay open (so a dispatch.Server's Shutdown can finish
// the calls in flight): the session then takes no new streams and ends,
// closing conn, with the last of them, or at once if there are none. To
// end everything at once, close conn too. When the session ends otherwise
// (the peer closed it or went away), Accept returns the streams already
// queued and then an error matching both ErrSessionClosed and
// transport.ErrClosed, since nothing more will come. The Listener reports
// no transport.Wire, since a *tls.Conn's settings are not its to know, so
// dispatch's in-process shortcut never stands in for it.
func NewServerConn(ctx context.Context, conn net.Conn, opts ...Option) (transport.Listener, error) {
	cfg, peer, err := connConfig("NewServerConn", conn, opts)
	if err != nil {
		conn.Close()
		return nil, err
	}
	setup := netconn.Setup{Proto: preface.Mux, Timeout: cfg.HandshakeTimeout, Caps: netconn.Caps(cfg.CompressionThreshold)}
	c, theirs, err := setup.Server(ctx, conn, peer)
	if err != nil {
		cfg.Logger.Log(ctx, prefaceLogLevel(err), "mux: NewServerConn failed", "side", "server", "remote", peer, "err", err)
		c.Close()
		return nil, err
	}
	l := newListener(&cfg, setup, nil, conn.LocalAddr())
	l.ended = make(chan struct{})
	l.remote = peer
	ss, err := l.startSession(c, theirs, peer)
	if err != nil {
		l.Close()
		return nil, err
	}
	go func() {
		defer close(l.ended)
		l.runSession(ss, peer)
	}()
	return &connListener{l: l}, nil
}

// connListener is the Listener NewServerConn returns: a listener of one
// session, whose Wire is not reported (see NewServerConn).
type connListener struct {
	l *listener
}

var (
	_ transport.Listener       = (*connListener)(nil)
	_ transport.FrameLimiter   = (*connListener)(nil)
	_ transport.ClosedReporter = (*connListener)(nil)
)

func (c *connListener) Accept() (transport.Socket, error) { return c.l.Accept() }
func (c *connListener) Close() error                      { return c.l.Close() }
func (c *connListener) Addr() net.Addr                    { return c.l.Addr() }

// MaxFrameSize returns the largest message the listener's streams carry.
func (c *connListener) MaxFrameSize() int { return c.l.MaxFrameSize() }

// Closed reports whether Close has been called (transport.ClosedReporter).
func (c *connListener) Closed() bool { return c.l.Closed() }

// connConfig applies opts for fn, NewClientConn or NewServerConn, on conn,
// and reports what makes them unfit: the options' own problems, TLS and a fallback. It
// returns the name of conn's peer for errors as well.
func connConfig(fn string, conn net.Conn, opts []Option) (config, string, error) {
	cfg := configOf(opts)
	peer := "peer"
	if a := conn.RemoteAddr(); a != nil {
		peer = a.String()
	}
	err := cfg.validate()
	if cfg.TLS != nil {
		err = errors.Join(err, fmt.Errorf("mux: %s with %s: WithTLS is not for %s: wrap the connection with tls.Client or tls.Server", fn, peer, fn))
	}
	if cfg.Fallback != nil {
		err = errors.Join(err, fmt.Errorf("mux: %s with %s: WithFallback is not for %s: it applies to the listeners Listen makes", fn, peer, fn))
	}
	cfg.TLS = nil
	cfg.Fallback = nil
	return cfg, peer, err
}
