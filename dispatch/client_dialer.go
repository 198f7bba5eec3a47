package dispatch

import (
	"context"
	"log/slog"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/sweep"
)

// connDialer makes the connections of a Client of one address, in one
// protocol: the seam on the Client's side that a protocol's dialling plugs
// into, as callConn is the one its calls go over. Client.connect calls
// dial when it has no live connection; the rest tells the Client what it
// reports of its calls and whether it may take the shortcut.
type connDialer interface {
	// dial connects to addr within ctx.
	dial(ctx context.Context, addr string) (callConn, error)
	// String names what the dialer dials over: a dial's error says it, and
	// it is the Network of the Client's RemoteAddr.
	String() string
	// path is the Path of the calls made over its connections.
	path() Path
	// shortcut returns the registry key and the wire a Client of addr finds
	// a Server of this process by; ok is false when its Clients never take
	// the shortcut.
	shortcut(addr string) (k regKey, w transport.Wire, ok bool)
	// maxFrame is the frame limit of its connections, which the
	// shortcut's copy mode applies as the network would.
	maxFrame() int
}

// transportDialer dials a transport.Transport: zerodial's own wire, over
// memory, tcp, mux or another transport.
type transportDialer struct {
	tr    transport.Transport
	codec codec.Codec
	log   *slog.Logger
	// quiet is the quiet sweep of the connections it makes: one for a
	// Client and its replicas, begun and ended by them (internal/sweep),
	// every clientQuietAfter.
	quiet sweep.Group
}

func (d *transportDialer) dial(ctx context.Context, addr string) (callConn, error) {
	sock, err := d.tr.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return newClientConn(sock, d.path(), d.codec, d.log, &d.quiet), nil
}

func (d *transportDialer) String() string { return d.tr.String() }

func (d *transportDialer) path() Path { return Path(d.tr.String()) }

func (d *transportDialer) shortcut(addr string) (regKey, transport.Wire, bool) {
	return clientKey(d.tr, addr), wireOf(d.tr), true
}

func (d *transportDialer) maxFrame() int {
	if fl, ok := d.tr.(transport.FrameLimiter); ok {
		return fl.MaxFrameSize()
	}
	return transport.DefaultMaxFrameSize
}
