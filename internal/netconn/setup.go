package netconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/internal/preface"
	"github.com/zerodial/transport/internal/unixsock"
)

// Setup says how a transport sets a connection up before it carries
// anything: TLS when configured, then the exchange of connection prefaces
// (WIRE.md, section 2), each step bounded in time so that a silent peer
// cannot hold a Dial or a listener's slot for ever. tcp and mux differ only
// in the protocol byte and in what bounds a server's TLS handshake.
type Setup struct {
	// Proto is the preface's protocol byte, preface.TCP or preface.Mux. It
	// also names the transport in errors ("tcp: ...").
	Proto byte
	// TLS, when not nil, makes the connection TLS: a client configuration
	// for Client, a server one for Server.
	TLS *tls.Config
	// Timeout bounds the preface exchange and a client's TLS handshake,
	// each.
	Timeout time.Duration
	// ServerTLSTimeout bounds a server's TLS handshake; zero means Timeout.
	// mux bounds it by its write timeout, as it did before the preface.
	ServerTLSTimeout time.Duration
	// Fallback, when not nil, takes the connections a server finds not to
	// speak zerodial (WIRE.md, "One port"): the server then reads first
	// (preface.Answer) and returns such a connection, its first bytes
	// replayed, as a *Foreign, for the caller to hand to Fallback, where
	// it would fail. nil: the exchange of preface.Exchange.
	Fallback *fallback.Listener
	// Caps is what this end announces in its preface (preface.CapS2...).
	Caps byte
}

// me is the preface this end sends.
func (s Setup) me() preface.Preface { return preface.Of(s.Proto).With(s.Caps) }

func (s Setup) name() string { return preface.ProtocolName(s.Proto) }

// Client sets c up as the dialling end: c was just dialled to addr, which
// names the peer in errors and, when the TLS configuration has no
// ServerName, gives the name the server's certificate must hold. It
// returns the connection to use, c or its TLS wrapping, and the peer's
// preface, which says what it announced. Every step ends
// when ctx does, with an error matching ctx.Err(); a peer that is not of
// the protocol fails with an error matching transport.ErrProtocol. On
// failure c is closed.
func (s Setup) Client(ctx context.Context, c net.Conn, addr string) (net.Conn, preface.Preface, error) {
	Tune(c)
	if s.TLS != nil {
		cfg := s.TLS
		if cfg.ServerName == "" {
			if unixsock.Is(addr) {
				// No host name to take: say what crypto/tls would leave
				// the caller to guess.
				if !cfg.InsecureSkipVerify {
					c.Close()
					return nil, preface.Preface{}, fmt.Errorf("%s: tls with %s: a unix address names no server: "+
						"set the tls.Config's ServerName to a name its certificate holds", s.name(), addr)
				}
			} else {
				cfg = cfg.Clone()
				cfg.ServerName, _, _ = net.SplitHostPort(addr)
			}
		}
		tc := tls.Client(c, cfg)
		// ctx may never end (a Dial with context.Background()): bound the
		// wait for a silent peer. preface.Exchange replaces the deadline.
		_ = c.SetDeadline(time.Now().Add(s.Timeout))
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, preface.Preface{}, fmt.Errorf("%s: tls handshake with %s: %w", s.name(), addr, DialError(ctx, err))
		}
		c = tc
	}
	peer, err := preface.Exchange(ctx, c, s.me(), addr, s.Timeout)
	if err != nil {
		c.Close()
		if s.TLS == nil && plaintextRefused(err) {
			return nil, peer, fmt.Errorf("%w (the listener may require TLS, which this client is not configured for)", err)
		}
		if preface.Silent(err) {
			// An HTTP/1 server says nothing until it has a request line,
			// which a preface never ends: name it, as the likely peer.
			return nil, peer, fmt.Errorf("%w (an HTTP/1 server stays silent so, waiting for a request: if %s serves HTTP, %s)", err, addr, preface.OverHTTP)
		}
		return nil, peer, err
	}
	return c, peer, nil
}

// plaintextRefused reports whether a plaintext client's preface exchange
// ended as it does against a TLS listener: the peer closed before sending
// anything, or answered with a TLS record (an alert, 0x15, or a handshake
// record, 0x16, of TLS 1.x).
func plaintextRefused(err error) bool {
	var pe *preface.Error
	if !errors.As(err, &pe) || pe.Timeout > 0 && pe.Err != nil && isTimeout(pe.Err) {
		return false
	}
	if len(pe.Got) == 0 {
		return pe.Err != nil
	}
	return len(pe.Got) >= 2 && (pe.Got[0] == 0x15 || pe.Got[0] == 0x16) && pe.Got[1] == 0x03
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Server sets c up as the listening end: c was just accepted from remote,
// which names the peer in errors. It returns the connection to use, c or
// its TLS wrapping, and the peer's preface. ctx cuts the set-up short (mux ends it when its
// listener closes; tcp closes the connection instead). A failed TLS
// handshake is a *TLSError, so that the listener can log it as the
// misconfiguration it usually is; a client that is not of the protocol
// fails with an error matching transport.ErrProtocol. With a Fallback, a
// client whose first bytes are not a zerodial preface fails with a
// *Foreign, which carries the connection to hand on (and which the caller
// does not close).
//
// On other failures the caller closes the connection returned (c, or its TLS
// wrapping once the handshake is done), after it has logged why: a peer
// that sees the connection end can then count on finding the reason in
// the log.
func (s Setup) Server(ctx context.Context, c net.Conn, remote string) (net.Conn, preface.Preface, error) {
	Tune(c)
	if s.TLS != nil {
		tc := tls.Server(c, s.TLS)
		hctx, cancel := context.WithTimeout(ctx, cmp.Or(s.ServerTLSTimeout, s.Timeout))
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return c, preface.Preface{}, &TLSError{Transport: s.name(), Err: err}
		}
		c = tc
	}
	if s.Fallback == nil {
		peer, err := preface.Exchange(ctx, c, s.me(), remote, s.Timeout)
		return c, peer, err
	}
	return s.answer(ctx, c, remote)
}

// TLSError is a server's failed TLS handshake. A zerodial client that
// reaches a TLS listener without TLS, or with a certificate it refuses,
// fails here: a misconfiguration, worth a warning where a port scanner is
// not.
type TLSError struct {
	Transport string // "tcp" or "mux": who reports
	Err       error  // the handshake's error
}

func (e *TLSError) Error() string { return e.Transport + ": tls handshake: " + e.Err.Error() }

// Unwrap returns the handshake's error.
func (e *TLSError) Unwrap() error { return e.Err }
