package tcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/dialled"
	"github.com/zerodial/transport/internal/netconn"
	"github.com/zerodial/transport/internal/options"
	"github.com/zerodial/transport/internal/preface"
)

// Transport is a TCP transport.Transport. The zero value is not usable;
// call New.
type Transport struct {
	opts options.Common
	err  error // the options' problems, returned by Dial and Listen
	// setup sets up the connections Dial makes and the listeners accept:
	// TLS as configured, then the preface, each step within the handshake
	// timeout.
	setup netconn.Setup

	dialled dialled.Set // the open sockets Dial made: Close closes them
}

var (
	_ transport.Transport    = (*Transport)(nil)
	_ transport.FrameLimiter = (*Transport)(nil)
	_ transport.WireReporter = (*Transport)(nil)
	_ transport.WireReporter = (*listener)(nil)
)

// New returns a TCP Transport configured by opts (WithMaxFrameSize,
// WithTLS, WithLogger, WithHandshakeTimeout, WithFrameTimeout,
// WithFallback), applied in order. New does not fail: if an option
// is invalid, every Dial and Listen of the Transport returns an error
// naming each invalid option and its value (errors.Join).
func New(opts ...Option) *Transport {
	o := apply(opts)
	return &Transport{
		opts: o,
		err:  o.Err(),
		setup: netconn.Setup{Proto: preface.TCP, TLS: o.TLS, Timeout: o.HandshakeTimeout, Fallback: o.Fallback,
			Caps: netconn.Caps(o.CompressionThreshold)},
	}
}

// String returns "tcp".
func (t *Transport) String() string { return "tcp" }

// MaxFrameSize returns the largest message this transport carries.
func (t *Transport) MaxFrameSize() int { return t.opts.MaxFrameSize }

// Wire reports what Dial speaks: "tcp/1", with TLS and a client
// certificate as configured (transport.WireReporter).
func (t *Transport) Wire() transport.Wire { return preface.DialWire(preface.TCP, t.opts.TLS) }

// Dial connects to addr (host:port, or a unix socket's "unix:PATH":
// docs/unix.md), completes the TLS handshake when TLS
// is configured, and exchanges prefaces with the listener (WIRE.md), all
// within ctx. A peer that is not a tcp listener of this protocol version —
// a mux listener, another server, one that sends nothing within the
// handshake timeout (WithHandshakeTimeout) — fails Dial with an error matching
// transport.ErrProtocol that says what the peer sent.
func (t *Transport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.dialled.Closed() {
		return nil, dialClosed(addr)
	}
	var d net.Dialer
	c, err := netconn.Dial(ctx, d.DialContext, addr)
	if err != nil {
		return nil, err
	}
	c, peer, err := t.setup.Client(ctx, c, addr)
	if err != nil {
		return nil, err
	}
	s := &dialledSocket{socket: newSocket(c, peer, t.opts), set: &t.dialled}
	if !t.dialled.Add(s) {
		s.socket.Close()
		return nil, dialClosed(addr)
	}
	return s, nil
}

func dialClosed(addr string) error { return fmt.Errorf("tcp: dial %s: %w", addr, transport.ErrClosed) }

// Close closes every socket this Transport dialled that is still open, as
// mux's Transport closes its sessions and memory's its sockets
// (transport.Transport): their Send and Recv then fail with
// transport.ErrClosed, and their peers see the connection end. Dial fails
// with transport.ErrClosed afterwards. Listeners are not affected, nor the
// sockets they accepted: close them on their own. Close is idempotent, and
// leaves no goroutine behind.
func (t *Transport) Close() error {
	t.dialled.Close()
	return nil
}

// dialledSocket is a socket Dial made, which Transport.Close closes
// unless it was closed first.
type dialledSocket struct {
	*socket
	set *dialled.Set // its Transport's
}

// Close closes the socket and lets its Transport forget it.
func (s *dialledSocket) Close() error {
	s.set.Remove(s)
	return s.socket.Close()
}

// acceptBacklog bounds the connections a listener holds that Accept has not
// yet returned: those being set up (TLS, preface) and those ready. Past it
// the listener stops taking connections from the kernel, whose own backlog
// then holds them, as it did for every connection before set-up moved off
// Accept's path; so a listener nobody Accepts from holds at most this many
// sockets and no goroutine for them.
const acceptBacklog = 256

// Listen binds addr (host:port; port 0 picks one), or a unix socket's
// path ("unix:PATH"; a "*" in its last element picks a free one; a stale
// socket file is replaced, a live listener's refused; Close removes the
// file: docs/unix.md). Each connection is set
// up — TLS handshake when configured, then the preface exchange — on a
// goroutine of its own, so a slow or silent peer holds up nobody else, and
// reaches Accept only once set up. One that fails, or takes longer than
// the handshake timeout (10 s) for a step, is closed and logged (Debug, or
// Warn for a zerodial peer of another protocol or version, or a failed TLS
// handshake). At most 256 connections wait for Accept, set up or being set
// up; more wait in the kernel's backlog. With WithFallback, a connection
// that does not open with the tcp preface is handed to the fallback
// listener instead of being dropped, and leaves its place then.
func (t *Transport) Listen(addr string) (transport.Listener, error) {
	if t.err != nil {
		return nil, t.err
	}
	nl, err := netconn.Listen(addr)
	if err != nil {
		return nil, err
	}
	l := &listener{
		nl:      nl,
		opts:    t.opts,
		setup:   t.setup,
		slots:   make(chan struct{}, acceptBacklog),
		ready:   make(chan setUpConn, acceptBacklog),
		done:    make(chan struct{}),
		setting: make(map[net.Conn]struct{}),
	}
	l.wg.Go(l.acceptConns)
	return l, nil
}

type listener struct {
	nl    net.Listener
	opts  options.Common
	setup netconn.Setup

	// slots holds a token for every connection taken from nl and not yet
	// returned by Accept or closed. ready, as large, holds the connections
	// set up, so a set-up goroutine never waits to queue one.
	slots chan struct{}
	ready chan setUpConn
	done  chan struct{} // closed by Close
	// closedFlag is set with done, and cheaper to test.
	closedFlag atomic.Bool
	// wg counts acceptConns and the set-up goroutines; Close waits for
	// them.
	wg sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	setting map[net.Conn]struct{} // being set up; Close closes them
}

// setUpConn is a connection set up, with the preface its peer sent.
type setUpConn struct {
	net.Conn
	peer preface.Preface
}

// Closed reports whether Close has been called (transport.ClosedReporter).
func (l *listener) Closed() bool { return l.closedFlag.Load() }

// MaxFrameSize returns the largest message the listener's sockets carry.
func (l *listener) MaxFrameSize() int { return l.opts.MaxFrameSize }

// Wire reports what the listener accepts: "tcp/1", with TLS and a required
// client certificate as configured (transport.WireReporter).
func (l *listener) Wire() transport.Wire { return preface.ListenWire(preface.TCP, l.opts.TLS) }

// Accept returns the next connection set up, as a Socket.
func (l *listener) Accept() (transport.Socket, error) {
	select {
	case c := <-l.ready:
		<-l.slots
		if l.Closed() {
			// Close raced with this Accept; it closes what is left in
			// ready, and this one too.
			c.Close()
			return nil, transport.ErrClosed
		}
		return newSocket(c.Conn, c.peer, l.opts), nil
	case <-l.done:
		return nil, transport.ErrClosed
	}
}

// acceptConns takes connections from the kernel while there is a slot for
// them, and sets up each on its own goroutine.
func (l *listener) acceptConns() {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return
		}
		c := netconn.Accept(l.nl, l.done, l.opts.Logger, "tcp")
		if c == nil {
			<-l.slots
			return
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			<-l.slots
			return
		}
		l.setting[c] = struct{}{}
		// acceptConns is counted in wg, so Add cannot race Close's Wait
		// down to zero.
		l.wg.Add(1)
		l.mu.Unlock()
		go l.setUp(c)
	}
}

// setUp completes TLS and the preface exchange on raw, then queues the
// connection for Accept; it closes it when either fails or the listener
// closes first.
func (l *listener) setUp(raw net.Conn) {
	defer l.wg.Done()
	remote := raw.RemoteAddr().String()
	// No ctx: Close ends a set-up by closing raw, which it finds in
	// l.setting.
	c, peer, err := l.setup.Server(context.Background(), raw, remote)
	if f := (*netconn.Foreign)(nil); errors.As(err, &f) {
		l.handOn(f, raw, remote)
		return
	}

	l.mu.Lock()
	delete(l.setting, raw)
	closed := l.closed
	if err == nil && !closed {
		l.ready <- setUpConn{c, peer} // never blocks: ready has room for every slot
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	if err != nil && !closed {
		level := slog.LevelDebug
		if preface.Mismatch(err) || errors.As(err, new(*netconn.TLSError)) {
			level = slog.LevelWarn // a zerodial peer, misconfigured
		}
		l.opts.Logger.Log(context.Background(), level, "tcp: connection dropped before Accept",
			"side", "server", "remote", remote, "err", err)
	}
	c.Close()
	<-l.slots
}

// handOn hands a connection that does not speak zerodial to the fallback,
// once Close can no longer find it among those being set up (so that Close
// never closes a connection the fallback has), and frees its place.
func (l *listener) handOn(f *netconn.Foreign, raw net.Conn, remote string) {
	l.mu.Lock()
	delete(l.setting, raw)
	closed := l.closed
	l.mu.Unlock()
	defer func() { <-l.slots }()
	if closed {
		f.Conn.Close()
		return
	}
	if err := l.setup.Fallback.Offer(f.Conn); err != nil {
		l.opts.Logger.Debug("tcp: connection dropped before Accept", "side", "server", "remote", remote,
			"err", fmt.Errorf("tcp: the fallback refused a %v connection: %w", f.Kind, err))
		return
	}
	l.opts.Logger.Debug("tcp: connection handed to the fallback", "side", "server", "remote", remote, "kind", f.Kind.String())
}

// Close stops listening: the address is free when it returns, pending and
// later Accepts fail with transport.ErrClosed, and connections being set up
// or set up but not yet accepted are closed. Sockets already accepted stay
// open. Close waits for the listener's goroutines to end.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.closedFlag.Store(true)
	close(l.done)
	setting := make([]net.Conn, 0, len(l.setting))
	for c := range l.setting {
		setting = append(setting, c)
	}
	l.mu.Unlock()

	err := l.nl.Close()
	// Closing a connection being set up ends its handshake at once.
	for _, c := range setting {
		c.Close()
	}
	l.wg.Wait()
	for drained := false; !drained; {
		select {
		case c := <-l.ready:
			c.Close()
		default:
			drained = true
		}
	}
	return err
}

func (l *listener) Addr() net.Addr { return l.nl.Addr() }
