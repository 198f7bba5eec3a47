package mux

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/transporttest"
)

// backAbilities is what Back's Transport, a client's Incoming and the
// streams between them have: a frame limit on both ends, a Closed on
// Incoming, and a mux stream's Socket abilities; no Wire, so that the
// in-process shortcut never stands in for them, and so no address space.
const backAbilities = transporttest.TransportFrameLimiter | transporttest.ListenerFrameLimiter |
	transporttest.ListenerClosedReporter | transporttest.AllSocketAbilities&^transporttest.SocketFrameWaiter

// TestBackAbilities holds Back's Transport, and the Incoming Listener of
// the client it calls back, to the optional interfaces they claim
// (transporttest.CheckAbilities): the streams Back opens are mux streams
// with every ability of one (a backSocket embeds the stream's type), and
// Incoming's are too. The whole suite does not run: Back dials only the
// sessions of one listener, by their remote addresses, which no Listen
// binds.
func TestBackAbilities(t *testing.T) {
	l := listen(t, newTransport(t))
	// The streams that open sessions: one echo, which tells the client
	// that l has the session (Dial costs no round trip).
	transporttest.Serve(t, l, func(s transport.Socket) {
		var m transport.Message
		if s.Recv(&m) == nil {
			s.Send(&m)
		}
		s.Close()
	})
	back, err := Back(l)
	require.NoError(t, err)
	tr := &backThroughIncoming{Transport: back, FrameLimiter: back.(transport.FrameLimiter), t: t, addr: l.Addr().String()}
	t.Cleanup(func() { back.Close() })
	require.NoError(t, transporttest.CheckAbilities(tr, "", backAbilities))
	have, err := transporttest.AbilitiesOf(tr, "")
	require.NoError(t, err)
	require.Equal(t, backAbilities, have, "%v", have)
}

// backThroughIncoming is a Transport whose Dial is Back's and whose Listen
// opens a session from a new client Transport to the listener Back wraps
// and returns that client's Incoming, addressed as Back dials it: the
// session's address at the client's end.
type backThroughIncoming struct {
	transport.Transport // Back's
	transport.FrameLimiter
	t    *testing.T
	addr string // of the listener Back wraps
}

func (b *backThroughIncoming) Listen(string) (transport.Listener, error) {
	c := newTransport(b.t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	s, err := c.Dial(ctx, b.addr)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var m transport.Message
	if err := s.Send(&m); err != nil {
		return nil, err
	}
	if err := s.Recv(&m); err != nil {
		return nil, err
	}
	in := c.Incoming()
	return &addressedIncoming{
		Listener: in, FrameLimiter: in.(transport.FrameLimiter), ClosedReporter: in.(transport.ClosedReporter),
		addr: s.LocalAddr(), client: c,
	}, nil
}

// addressedIncoming is a client's Incoming with the address Back dials it
// by; its Close closes the client too.
type addressedIncoming struct {
	transport.Listener
	transport.FrameLimiter
	transport.ClosedReporter
	addr   net.Addr
	client *Transport
}

func (l *addressedIncoming) Addr() net.Addr { return l.addr }

func (l *addressedIncoming) Close() error {
	err := l.Listener.Close()
	l.client.Close()
	return err
}
