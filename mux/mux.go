package mux

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/yamux"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/netconn"
	"github.com/zerodial/transport/internal/preface"
)

// Transport is the mux transport.Transport: it keeps one yamux session per
// remote address and opens a stream on it for every Dial. The zero value is
// not usable; call New. A Transport that has dialled holds connections and
// goroutines until Close.
type Transport struct {
	cfg config
	err error // the options' problems, returned by Dial and Listen
	// setup sets up the connections sessions run over, on either end: TLS
	// as configured, then the preface, each step within the handshake
	// timeout (WithHandshakeTimeout).
	setup netconn.Setup

	// ctx ends with Close; session set-up runs under it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	// current is the session new streams to an address go on.
	current map[string]*clientSession
	// all holds every session not yet known to be closed, including those
	// retired from current that still carry streams.
	all map[*clientSession]struct{}
	// incoming is the Listener of the streams peers open on this
	// Transport's sessions, made by the first call to Incoming; nil until
	// then, and the sessions close those streams at once.
	incoming *incoming
	// wg counts the goroutines Close waits for.
	wg sync.WaitGroup
}

var (
	_ transport.Transport    = (*Transport)(nil)
	_ transport.FrameLimiter = (*Transport)(nil)
	_ transport.WireReporter = (*Transport)(nil)
	_ transport.WireReporter = (*listener)(nil)
)

// New returns a mux Transport configured by opts, applied in order: the
// settings every network transport has (WithMaxFrameSize, WithTLS,
// WithLogger, WithHandshakeTimeout, WithFrameTimeout) and this transport's
// own (WithKeepAlive, WithStreamLimit, WithAcceptBacklog,
// WithStreamOpenTimeout, WithStreamCloseTimeout, WithWriteTimeout,
// WithStreamWindow, WithDialer, WithFallback). New does not fail: if an option is
// invalid, every Dial and Listen of the Transport returns an error naming
// each invalid option and its value (errors.Join).
func New(opts ...Option) *Transport {
	return fromConfig(configOf(opts))
}

// configOf applies opts, in order, to the defaults.
func configOf(opts []Option) config {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	return cfg
}

// fromConfig returns a Transport of cfg.
func fromConfig(cfg config) *Transport {
	t := &Transport{
		cfg: cfg,
		err: cfg.validate(),
		setup: netconn.Setup{
			Proto:    preface.Mux,
			TLS:      cfg.TLS,
			Timeout:  cfg.HandshakeTimeout,
			Fallback: cfg.Fallback,
			Caps:     netconn.Caps(cfg.CompressionThreshold),
		},
		current: make(map[string]*clientSession),
		all:     make(map[*clientSession]struct{}),
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// String returns "mux".
func (t *Transport) String() string { return "mux" }

// MaxFrameSize returns the largest message this transport carries.
func (t *Transport) MaxFrameSize() int { return t.cfg.MaxFrameSize }

// Wire reports what Dial speaks: "mux/1", with TLS and a client
// certificate as configured (transport.WireReporter).
func (t *Transport) Wire() transport.Wire { return preface.DialWire(preface.Mux, t.cfg.TLS) }

// Dial opens a stream to addr (host:port) on the session kept for addr,
// first connecting one (TCP, then TLS when configured, then the exchange of
// prefaces, then yamux) if there is none or the one there has died.
// Concurrent Dials to a new address share one connection attempt, and each
// returns when its own ctx ends. A peer that is not a mux listener of this
// protocol version — a tcp listener, another server, one that sends nothing
// within the handshake timeout (10 s) — fails the Dial with an error
// matching transport.ErrProtocol that says what the peer sent.
//
// Connecting costs one round trip more than TCP (and TLS) for the preface.
// Opening a stream costs no round trip: Dial returns once the stream's
// opening frame is written, before the peer accepts it. When the peer's
// accept backlog is full, or the session has as many streams as the stream
// limit allows (DefaultStreamLimit), Dial waits, within ctx, for room.
//
// A session found dead, or that dies as the stream is opened (its
// connection fails to take the opening frame), is replaced by a new one,
// once; if that one fails too, Dial returns an error matching
// ErrSessionClosed.
//
// Sessions are keyed by addr as given, so "localhost:80" and
// "127.0.0.1:80" get a session each.
func (t *Transport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if t.err != nil {
		return nil, t.err
	}
	if err := ctx.Err(); err != nil {
		return nil, dialCtxErr(addr, err)
	}
	for retried := false; ; retried = true {
		cs, err := t.session(ctx, addr)
		if err != nil {
			return nil, err
		}
		c, err := cs.open(ctx)
		if err == nil {
			return newSocket(c, t.cfg.Common), nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, dialCtxErr(addr, ctxErr)
		}
		var re *retireError
		if !errors.As(err, &re) {
			return nil, fmt.Errorf("mux: dial %s: %w", addr, err)
		}
		// The session died, before or during the open, or refuses new
		// streams: never hand out a stream of it; connect afresh, once.
		t.retire(cs)
		if retried {
			return nil, fmt.Errorf("mux: dial %s: %w: %w", addr, ErrSessionClosed, re.cause)
		}
	}
}

func dialCtxErr(addr string, err error) error {
	return fmt.Errorf("mux: dial %s: %w", addr, err)
}

// Close closes every session this Transport dialled, and with them their
// streams (transport.Transport), whose Send and Recv then fail with an
// error matching transport.ErrClosed, as a tcp socket's does, and
// ErrSessionClosed; their peers see the connection end at once. It closes
// the Listener Incoming returns, and the streams the peers opened that it
// handed out. Dial fails with transport.ErrClosed afterwards. Listeners
// are not affected, nor the streams they accepted: close them on their
// own. Close waits for the Transport's goroutines to end, so that none
// outlives it.
//
// A stream Dial opened that the peer's listener had not yet taken from
// its session when the session ended is never accepted there: yamux
// drops the streams still waiting for AcceptStream when a session ends
// (it cannot acknowledge them any more), and with them what was sent on
// them. tcp's listener, and memory's, still hand out such a connection,
// with what was sent, and then its end.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.cancel()
	all := make([]*clientSession, 0, len(t.all))
	for cs := range t.all {
		all = append(all, cs)
	}
	clear(t.all)
	clear(t.current)
	in := t.incoming
	t.mu.Unlock()

	// First, so that no session's accept loop stays blocked handing a
	// stream to it: Close waits for those loops.
	if in != nil {
		in.Close()
	}
	for _, cs := range all {
		cs.closeHere()
	}
	t.wg.Wait()
	return nil
}

// retireError is an open failure after which the session must not be used
// for new streams: it died, or refuses them. cause says why.
type retireError struct{ cause error }

func (e *retireError) Error() string { return "mux: session unusable: " + e.cause.Error() }
func (e *retireError) Unwrap() error { return e.cause }

// retireErr reports whether err from OpenStream means the session can take
// no more streams.
func retireErr(err error) bool {
	return errors.Is(err, yamux.ErrSessionShutdown) ||
		errors.Is(err, yamux.ErrRemoteGoAway) ||
		errors.Is(err, yamux.ErrStreamsExhausted)
}

// goTracked runs fn on a goroutine Close waits for; it reports false, and
// runs nothing, once the Transport is closed.
func (t *Transport) goTracked(fn func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Go(fn)
	return true
}
