package tcp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

// Transport is a TCP transport.Transport. The zero value is not usable;
// call New.
type Transport struct {
	opts transport.Options
}

var _ transport.Transport = (*Transport)(nil)
var _ transport.FrameLimiter = (*Transport)(nil)

// New returns a TCP Transport. It understands transport.WithMaxFrameSize,
// transport.WithTLS and transport.WithLogger.
func New(opts ...transport.Option) *Transport {
	return &Transport{opts: transport.Apply(opts...)}
}

// String returns "tcp".
func (t *Transport) String() string { return "tcp" }

// MaxFrameSize returns the largest message this transport carries.
func (t *Transport) MaxFrameSize() int { return t.opts.MaxFrameSize }

// Dial connects to addr (host:port), completing the TLS handshake when TLS
// is configured, within ctx.
func (t *Transport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, DialError(ctx, err)
	}
	tuneConn(c)
	if t.opts.TLSConfig != nil {
		cfg := t.opts.TLSConfig
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("tcp: tls handshake with %s: %w", addr, err)
		}
		c = tc
	}
	return newSocket(c, t.opts.MaxFrameSize), nil
}

// DialError maps a dial failure to the transport's errors: a refused
// connection matches transport.ErrConnectionRefused, and a dial cut short by
// ctx matches ctx.Err(). The mux transport uses it too.
func DialError(ctx context.Context, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: %w", transport.ErrConnectionRefused, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	return err
}

func tuneConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		// Go sets TCP_NODELAY by default; say so, since frames depend on it.
		_ = tc.SetNoDelay(true)
	}
}

// Listen binds addr (host:port; port 0 picks one).
func (t *Transport) Listen(addr string) (transport.Listener, error) {
	nl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &listener{nl: nl, opts: t.opts}, nil
}

type listener struct {
	nl     net.Listener
	opts   transport.Options
	closed atomic.Bool
}

// Closed reports whether Close has been called (transport.ClosedReporter).
func (l *listener) Closed() bool { return l.closed.Load() }

// MaxFrameSize returns the largest message the listener's sockets carry.
func (l *listener) MaxFrameSize() int { return l.opts.MaxFrameSize }

func (l *listener) Accept() (transport.Socket, error) {
	c, err := l.nl.Accept()
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return nil, transport.ErrClosed
		}
		return nil, err
	}
	tuneConn(c)
	if l.opts.TLSConfig != nil {
		c = ServerTLS(c, l.opts.TLSConfig)
	}
	return newSocket(c, l.opts.MaxFrameSize), nil
}

// HandshakeTimeout bounds the server side of a TLS handshake.
const HandshakeTimeout = 10 * time.Second

// ServerTLS wraps an accepted connection in TLS and starts the handshake at
// once, in the background: a slow client never holds up Accept for the
// others, and a dialer's handshake completes even before the server first
// reads. A handshake that fails or takes longer than HandshakeTimeout closes
// the connection. The mux transport uses it too.
func ServerTLS(c net.Conn, cfg *tls.Config) net.Conn {
	tc := tls.Server(c, cfg)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), HandshakeTimeout)
		defer cancel()
		if tc.HandshakeContext(ctx) != nil {
			tc.Close()
		}
	}()
	return tc
}

func (l *listener) Close() error {
	l.closed.Store(true)
	return l.nl.Close()
}

func (l *listener) Addr() net.Addr { return l.nl.Addr() }

func newSocket(c net.Conn, max int) transport.Socket { return frame.NewSocket(c, max) }
