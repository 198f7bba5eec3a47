package mux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/yamux"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/netconn"
	"github.com/zerodial/transport/internal/preface"
)

// Listen binds addr (host:port; port 0 picks one), or a unix socket's
// path ("unix:PATH", as tcp's Listen does: docs/unix.md), and serves a yamux
// session on every connection it accepts, over TLS when configured, once
// the client has sent the mux preface (WIRE.md). Accept returns the streams
// the peers open, from all sessions, in the order they arrive. A connection
// that fails (a bad handshake, a wrong or missing preface within the
// handshake timeout of 10 s, bytes that are not yamux, a peer that stops
// answering keepalives) ends its own session only. At most 256 connections
// are being set up at once (setupBacklog); more wait in the kernel's
// backlog. With WithFallback, a connection that does not open with the mux
// preface is handed to the fallback listener instead of being dropped.
func (t *Transport) Listen(addr string) (transport.Listener, error) {
	if t.err != nil {
		return nil, t.err
	}
	nl, err := netconn.Listen(addr)
	if err != nil {
		return nil, err
	}
	l := newListener(&t.cfg, t.setup, nl, nl.Addr())
	l.wg.Go(l.acceptConns)
	return l, nil
}

// newListener returns a listener of streams set up with cfg and setup.
// nl is nil for the listener of one connection (NewServerConn), whose
// sessions come from no net.Listener; addr is what Addr reports.
func newListener(cfg *config, setup netconn.Setup, nl net.Listener, addr net.Addr) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	return &listener{
		cfg:      cfg,
		setup:    setup,
		nl:       nl,
		addr:     addr,
		queue:    make(chan *streamConn, cfg.yamux.AcceptBacklog),
		setting:  make(chan struct{}, setupBacklog),
		done:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
		sessions: make(map[*serverSession]struct{}),
	}
}

type listener struct {
	cfg   *config
	setup netconn.Setup // sets up accepted connections (TLS, preface)
	nl    net.Listener  // nil for the listener of one connection
	addr  net.Addr
	// ended is closed when the session of a listener of one connection
	// ends: Accept then fails once the queue is empty. nil, so never
	// ready, for a Transport's listener, whose sessions come and go.
	ended  chan struct{}
	remote string // the peer of a listener of one connection, for errors
	// queue holds streams taken from their sessions and not yet returned
	// by Accept.
	queue chan *streamConn
	// setting holds a token for every accepted connection being set up
	// (TLS, preface, the first bytes of a fallback's connection).
	setting chan struct{}
	done    chan struct{} // closed by Close
	// closedFlag is set with done, and cheaper to test.
	closedFlag atomic.Bool
	// ctx ends with Close and bounds TLS handshakes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // acceptConns

	mu       sync.Mutex
	closed   bool
	sessions map[*serverSession]struct{}
}

// serverSession is one accepted connection's session.
type serverSession struct {
	l    *listener
	sess *yamux.Session
	tr   *tracker
	// remote is the accepted connection's RemoteAddr().String(), the
	// address a handler sees and Back's Dial names the session by.
	remote string
	// slots holds a token per stream the peer opened and this end handed
	// out, with a stream limit; backSlots one per stream Back opened. Each
	// direction has its own, so that neither end's streams can use up the
	// room the other's need.
	slots, backSlots chan struct{}
	// live counts the streams handed out (queued, accepted, or opened by
	// Back) and not closed; l.mu. The session of a closed listener ends
	// when it reaches 0.
	live int
}

func (l *listener) Addr() net.Addr { return l.addr }

// MaxFrameSize returns the largest message the listener's streams carry.
func (l *listener) MaxFrameSize() int { return l.cfg.MaxFrameSize }

// Closed reports whether Close has been called (transport.ClosedReporter).
func (l *listener) Closed() bool { return l.closedFlag.Load() }

// Wire reports what the listener accepts: "mux/1", with TLS and a required
// client certificate as configured (transport.WireReporter).
func (l *listener) Wire() transport.Wire { return preface.ListenWire(preface.Mux, l.cfg.TLS) }

func (l *listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Accept returns the next stream a peer opened.
func (l *listener) Accept() (transport.Socket, error) {
	select {
	case c := <-l.queue:
		return l.accepted(c)
	case <-l.done:
		return nil, transport.ErrClosed
	case <-l.ended:
		// The one session is gone; streams it queued before it went
		// come first, as their data may still be read.
		select {
		case c := <-l.queue:
			return l.accepted(c)
		default:
		}
		if l.isClosed() {
			return nil, transport.ErrClosed
		}
		return nil, sessionEndedError{l.remote}
	}
}

// sessionEndedError fails Accept on the listener of one connection once
// its session has ended. It matches ErrSessionClosed, for what happened,
// and transport.ErrClosed, since nothing more will come: a dispatch.Server
// stops serving rather than retry.
type sessionEndedError struct{ remote string }

func (e sessionEndedError) Error() string {
	return "mux: accept: the session with " + e.remote + " has ended"
}

func (sessionEndedError) Unwrap() []error { return []error{ErrSessionClosed, transport.ErrClosed} }

// accepted hands c out from Accept, or closes it if the listener closed.
func (l *listener) accepted(c *streamConn) (transport.Socket, error) {
	if l.isClosed() {
		c.Close()
		return nil, transport.ErrClosed
	}
	return newSocket(c, l.cfg.Common), nil
}

// Close stops listening: the address is free when it returns, Accept fails
// with transport.ErrClosed, and streams not yet accepted are closed.
// Streams already accepted stay open, as the Listener contract requires, so
// a session that carries some is told to take no new streams (a yamux
// go-away) and closed when the last of them is; a session with none is
// closed at once.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.closedFlag.Store(true)
	close(l.done)
	l.cancel()
	l.mu.Unlock()

	var err error
	if l.nl != nil {
		err = l.nl.Close()
	}
	l.wg.Wait()
	for drained := false; !drained; {
		select {
		case c := <-l.queue:
			c.Close()
		default:
			drained = true
		}
	}

	l.mu.Lock()
	var idle, busy []*serverSession
	for ss := range l.sessions {
		if ss.live == 0 {
			idle = append(idle, ss)
		} else {
			busy = append(busy, ss)
		}
	}
	l.mu.Unlock()
	for _, ss := range idle {
		ss.close()
	}
	for _, ss := range busy {
		// GoAway waits for its frame to be written, which a stalled
		// connection can hold up for the write timeout; Close does not.
		go ss.sess.GoAway()
	}
	return err
}

// setupBacklog bounds the connections a listener sets up at once, as tcp's
// acceptBacklog does: past it the listener stops taking connections from
// the kernel, whose own backlog then holds them, so that silent peers
// cannot make it hold sockets and goroutines without bound.
const setupBacklog = 256

// acceptConns accepts connections until Close, while fewer than
// setupBacklog are being set up, and serves each on its own goroutine, so
// a slow handshake holds up nobody else.
func (l *listener) acceptConns() {
	for {
		select {
		case l.setting <- struct{}{}:
		case <-l.done:
			return
		}
		c := netconn.Accept(l.nl, l.done, l.cfg.Logger, "mux")
		if c == nil {
			<-l.setting
			return
		}
		go l.serve(c)
	}
}

// serve sets c up (TLS when configured, then the preface exchange) and runs
// a server session on it until the session ends.
func (l *listener) serve(c net.Conn) {
	remote := c.RemoteAddr().String()
	log := l.cfg.Logger
	// Before the tap, which must see yamux's bytes only (track.go); and
	// before yamux.Server, so a client of another protocol never gets a
	// session. l.ctx ends with Close, which cuts the set-up short.
	c, theirs, err := l.setup.Server(l.ctx, c, remote)
	<-l.setting
	if f := (*netconn.Foreign)(nil); errors.As(err, &f) {
		l.handOn(f, remote)
		return
	}
	if err != nil {
		var te *netconn.TLSError
		switch {
		case l.isClosed():
		case errors.As(err, &te):
			log.Warn("mux: tls handshake failed", "side", "server", "remote", remote, "err", te.Err)
		default:
			log.Log(context.Background(), prefaceLogLevel(err), "mux: connection dropped at its preface", "side", "server", "remote", remote, "err", err)
		}
		c.Close()
		return
	}
	ss, err := l.startSession(c, theirs, remote)
	if err != nil {
		return
	}
	l.runSession(ss, remote)
}

// handOn hands a connection that does not speak zerodial to the fallback,
// or closes it if the listener is closed.
func (l *listener) handOn(f *netconn.Foreign, remote string) {
	if l.isClosed() {
		f.Conn.Close()
		return
	}
	if err := l.setup.Fallback.Offer(f.Conn); err != nil {
		l.cfg.Logger.Debug("mux: connection dropped at its preface", "side", "server", "remote", remote,
			"err", fmt.Errorf("mux: the fallback refused a %v connection: %w", f.Kind, err))
		return
	}
	l.cfg.Logger.Debug("mux: connection handed to the fallback", "side", "server", "remote", remote, "kind", f.Kind.String())
}

// prefaceLogLevel is the level a failed preface exchange is logged at: a
// warning for a zerodial peer of another protocol or version, which is a
// misconfiguration, and debug for anything else (a port scanner, say).
func prefaceLogLevel(err error) slog.Level {
	if preface.Mismatch(err) {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// startSession starts a yamux server on c, which is set up, and registers
// it with the listener; peer is the preface the client sent. On failure c
// is closed.
func (l *listener) startSession(c net.Conn, peer preface.Preface, remote string) (*serverSession, error) {
	log := l.cfg.Logger
	ss := &serverSession{l: l, tr: newTracker(), remote: remote}
	ss.tr.comp = netconn.Compression(l.cfg.CompressionThreshold, peer)
	if n := l.cfg.streamLimit; n > 0 {
		ss.slots = make(chan struct{}, n)
		ss.backSlots = make(chan struct{}, n)
	}
	sess, err := yamux.Server(newTapConn(c, ss.tr), l.cfg.sessionConfig(newSessionLogger(log, "server", remote)))
	if err != nil {
		c.Close()
		log.Error("mux: session failed to start", "side", "server", "remote", remote, "err", err)
		return nil, fmt.Errorf("mux: session with %s: %w", remote, err)
	}
	ss.sess = sess
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		sess.Close()
		return nil, fmt.Errorf("mux: session with %s: listener closed: %w", remote, transport.ErrClosed)
	}
	l.sessions[ss] = struct{}{}
	l.mu.Unlock()
	return ss, nil
}

// runSession hands the session's streams to Accept until it ends, and then
// forgets it.
func (l *listener) runSession(ss *serverSession, remote string) {
	ss.acceptStreams()

	l.mu.Lock()
	delete(l.sessions, ss)
	l.mu.Unlock()
	l.cfg.Logger.Debug("mux: session closed", "side", "server", "remote", remote)
}

// acceptStreams moves the session's streams to the listener's queue until
// the session ends. Once the listener is closed it closes them instead, so
// that a peer's stream is never left waiting for an Accept that will not
// come.
func (ss *serverSession) acceptStreams() {
	l := ss.l
	for {
		slot := false
		if ss.slots != nil {
			select {
			case ss.slots <- struct{}{}:
				slot = true
			case <-l.done: // closing, not queuing: no slot needed
			case <-ss.sess.CloseChan():
				return
			}
		}
		st, err := ss.sess.AcceptStream()
		if err != nil {
			if slot {
				<-ss.slots
			}
			return
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			st.Close()
			if slot {
				<-ss.slots
			}
			continue
		}
		ss.live++
		l.mu.Unlock()
		l.enqueue(newStreamConn(st, ss, ss.tr))
	}
}

// enqueue queues c for Accept, or closes it if the listener closes first.
func (l *listener) enqueue(c *streamConn) {
	select {
	case l.queue <- c:
		if l.isClosed() {
			// Close may have emptied the queue before c went in. Each
			// such late arrival takes one stream back out, so none is
			// stranded there.
			select {
			case late := <-l.queue:
				late.Close()
			default:
			}
		}
	case <-l.done:
		c.Close()
	}
}

// streamClosed is called once per stream the peer opened and this end
// handed out, when it is closed.
func (ss *serverSession) streamClosed() { ss.release(ss.slots) }

// release undoes the accounting of one stream: its count in live and, if
// slots is not nil, its token there. The session of a closed listener is
// closed with its last stream.
func (ss *serverSession) release(slots chan struct{}) {
	l := ss.l
	l.mu.Lock()
	ss.live--
	closeNow := l.closed && ss.live == 0
	l.mu.Unlock()
	if slots != nil {
		<-slots
	}
	if closeNow {
		ss.close()
	}
}

// close closes the session, telling its streams first (tracker.markDead).
func (ss *serverSession) close() {
	ss.tr.markDead(nil)
	ss.sess.Close()
}
