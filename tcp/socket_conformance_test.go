package tcp_test

import (
	"context"
	"net"
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/netconn"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// TestConformanceNewSocket holds Sockets made by NewSocket to the whole
// Transport contract, through connTransport.
func TestConformanceNewSocket(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		return connTransport{}, "127.0.0.1:0"
	})
}

// connTransport is a Transport built the way a caller with connections of
// its own would build one: connections from the net package, turned into
// Sockets by NewSocket on both ends. Unlike a tcp listener it sets each
// connection up in Accept, one at a time, which is enough for the suite.
type connTransport struct{}

func (connTransport) String() string { return "tcp.NewSocket" }

// MaxFrameSize reports the limit of NewSocket's Sockets (the default), for
// the suite's FrameTooLarge case.
func (connTransport) MaxFrameSize() int { return transport.DefaultMaxFrameSize }

func (connTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// The errors the contract asks of Dial: refused, or ctx's.
		return nil, netconn.DialError(ctx, err)
	}
	return tcp.NewSocket(ctx, c)
}

func (connTransport) Listen(addr string) (transport.Listener, error) {
	nl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &connListener{nl: nl, ctx: ctx, cancel: cancel}, nil
}

type connListener struct {
	nl net.Listener
	// ctx ends with Close, and with it a set-up under way in Accept.
	ctx    context.Context
	cancel context.CancelFunc
}

// Accept sets up the next connection; one whose peer is not a tcp peer is
// dropped, as a tcp listener drops it.
func (l *connListener) Accept() (transport.Socket, error) {
	for {
		c, err := l.nl.Accept()
		if err != nil {
			if l.ctx.Err() != nil {
				return nil, transport.ErrClosed
			}
			return nil, err
		}
		s, err := tcp.NewSocket(l.ctx, c)
		if err == nil {
			return s, nil
		}
		if l.ctx.Err() != nil {
			return nil, transport.ErrClosed
		}
	}
}

func (l *connListener) Close() error {
	l.cancel()
	return l.nl.Close()
}

func (l *connListener) Addr() net.Addr { return l.nl.Addr() }
