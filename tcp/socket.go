package tcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/netconn"
	"github.com/zerodial/transport/internal/options"
	"github.com/zerodial/transport/internal/preface"
	"github.com/zerodial/transport/internal/unixsock"
)

// NewSocket speaks the tcp protocol over conn, a connection made some other
// way than by Dial and Listen: one end of a unix socket or of net.Pipe, a
// connection from a proxy, a pool or a listener of the caller's own. It
// exchanges the connection preface (WIRE.md, section 2) over conn and
// returns a Socket of frames over it. The exchange is symmetric, so either
// end may call NewSocket, and it interoperates with Dial and with a
// Listener of this package on the other end.
//
// The exchange ends when ctx does, with an error matching ctx.Err(), and
// after the handshake timeout (10 s) at the latest. A peer that is not of
// this protocol and version — a mux peer, another server, one that sends
// nothing — fails it with an error matching transport.ErrProtocol that
// says what the peer sent, as Dial's does. On failure conn is closed. A
// *net.TCPConn gets TCP_NODELAY, as Dial's connections do, since a message
// is one write.
//
// TLS is the caller's business: pass a *tls.Conn, whose handshake the
// first read or write completes (bounded like the exchange). WithTLS is
// refused rather than ignored, since a caller who passed it expects a
// connection it does not get. Of the options, NewSocket honours
// WithMaxFrameSize, and WithLogger, which hears of a failed exchange as a
// listener would (a warning for a zerodial peer of another protocol or
// version, debug otherwise). Invalid options, WithTLS among them, fail
// NewSocket before the exchange, all named in one error (errors.Join).
func NewSocket(ctx context.Context, conn net.Conn, opts ...Option) (transport.Socket, error) {
	o := apply(opts)
	peer := "peer"
	if a := conn.RemoteAddr(); a != nil {
		peer = a.String()
	}
	if err := newSocketErr(o, peer); err != nil {
		conn.Close()
		return nil, err
	}
	// Without TLS, Client's set-up is the exchange alone, the same on
	// either end; and it closes conn on failure, as NewSocket must.
	setup := netconn.Setup{Proto: preface.TCP, Timeout: o.HandshakeTimeout, Caps: netconn.Caps(o.CompressionThreshold)}
	c, theirs, err := setup.Client(ctx, conn, peer)
	if err != nil {
		level := slog.LevelDebug
		if preface.Mismatch(err) {
			level = slog.LevelWarn // a zerodial peer, misconfigured
		}
		o.Logger.Log(ctx, level, "tcp: NewSocket failed", "remote", peer, "err", err)
		return nil, err
	}
	return newSocket(c, theirs, o), nil
}

// errTLSOption refuses WithTLS in NewSocket.
var errTLSOption = errors.New("WithTLS is not for NewSocket: wrap the connection with tls.Client or tls.Server")

// errFallbackOption refuses WithFallback in NewSocket, whose connection is
// the caller's to route.
var errFallbackOption = errors.New("WithFallback is not for NewSocket: it applies to the listeners Listen makes")

// newSocketErr reports what makes o unfit for NewSocket with peer: the
// options' own problems, TLS and a fallback.
func newSocketErr(o options.Common, peer string) error {
	err := o.Err()
	if o.TLS != nil {
		err = errors.Join(err, fmt.Errorf("tcp: NewSocket with %s: %w", peer, errTLSOption))
	}
	if o.Fallback != nil {
		err = errors.Join(err, fmt.Errorf("tcp: NewSocket with %s: %w", peer, errFallbackOption))
	}
	return err
}

// newSocket returns the Socket of c, set up with o, whose peer sent the
// preface peer.
func newSocket(c net.Conn, peer preface.Preface, o options.Common) *socket {
	s := &socket{Socket: frame.NewSocket(c, o.MaxFrameSize).
		WithFrameTimeout(o.FrameTimeout).
		WithCompression(netconn.Compression(o.CompressionThreshold, peer))}
	s.cred, s.credOK = unixsock.CredOf(c)
	return s
}

// socket is a tcp connection's transport.Socket: frame's, and a
// transport.FrameWaiter. With it, dispatch reads a reply on the goroutine
// of the caller waiting for it, and runs a call that comes alone on the
// goroutine that read it, sparing a wake of another goroutine at each end
// of every call (BenchmarkUnary/zerodial-tcp). A mux stream's socket does
// not offer it: yamux's own goroutines hand every message on, and there
// the same made calls slower.
type socket struct {
	*frame.Socket
	// cred is the peer's, when the connection is a unix socket's and the
	// system reports it (credOK).
	cred   transport.PeerCred
	credOK bool
}

var (
	_ transport.FrameWaiter      = (*socket)(nil)
	_ transport.FrameWaiter      = (*dialledSocket)(nil)
	_ transport.PeerCredReporter = (*socket)(nil)
	_ transport.PeerCredReporter = (*dialledSocket)(nil)
)

// PeerCred returns the peer's credentials, read once when the connection
// was made, when it is a unix socket and the system reports them
// (transport.PeerCredReporter).
func (s *socket) PeerCred() (transport.PeerCred, bool) { return s.cred, s.credOK }

// WaitFrame waits until the next message has begun to arrive, taking none
// of it (transport.FrameWaiter).
func (s *socket) WaitFrame() error { return s.PeekFrame() }
