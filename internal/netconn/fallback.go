package netconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/internal/preface"
)

// Foreign is Setup.Server's error for a connection that does not speak
// zerodial, when Setup has a Fallback: Conn, classified as Kind, replays
// the bytes read, and is for the caller to hand to the fallback
// (fallback.Listener.Offer) once it no longer counts it as its own — or to
// close, if the listener closed meanwhile. It is not to be set up further.
type Foreign struct {
	Kind fallback.Kind // what the connection's first bytes said
	Conn net.Conn      // the connection, its first bytes replayed
}

func (e *Foreign) Error() string { return "not zerodial: " + e.Kind.String() }

// aLongTimeAgo is a deadline in the past, which makes a blocked read on a
// net.Conn return at once.
var aLongTimeAgo = time.Unix(1, 0)

// answer is the preface step of a server with a fallback (WIRE.md, "One
// port"): it reads first, sets a zerodial peer up as Exchange would, and
// returns any other as a *Foreign, classified within the same handshake
// timeout that bounds the preface, for the caller to hand to s.Fallback. A TLS client that negotiated a protocol
// by ALPN is handed on without a byte read: zerodial has no ALPN protocol,
// so such a client speaks something else (h2 or http/1.1, for a web client
// of a listener whose configuration lists them in NextProtos).
func (s Setup) answer(ctx context.Context, c net.Conn, remote string) (net.Conn, preface.Preface, error) {
	if tc, ok := c.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol != "" {
		return nil, preface.Preface{}, &Foreign{Kind: fallback.KindOf(tc), Conn: tc}
	}
	got, peer, err := preface.Answer(ctx, c, s.me(), remote, s.Timeout)
	if !preface.Foreign(err) {
		return c, peer, err
	}
	// c keeps Answer's deadline, so the preface and the bytes read to tell
	// the kind are bounded by one handshake timeout, and ctx still cuts
	// them short.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	sc, kind, err := fallback.Sniff(c, got)
	if !stop() {
		err = errors.Join(ctx.Err(), err)
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if err != nil {
		return c, preface.Preface{}, fmt.Errorf("%s: connection from %s, not zerodial: %w", s.name(), remote, err)
	}
	return nil, preface.Preface{}, &Foreign{Kind: kind, Conn: sc}
}
