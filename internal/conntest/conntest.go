// Package conntest builds, for tests, a transport.Transport the way a
// program with connections of its own would: connections from the net
// package, turned into Sockets by a function on each end (tcp.NewSocket,
// or a mux session's stream). transporttest.Run then holds those functions
// to the whole Transport contract. Records keeps what a test's loggers
// are told.
package conntest

import (
	"context"
	"net"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/dialled"
	"github.com/zerodial/transport/internal/netconn"
)

// Transport dials and listens on TCP and makes a Socket of each connection
// with Client (the dialling end) or Server (the accepting end). A
// connection whose set-up fails on the accepting end is dropped, as a
// listener drops it. Each set-up runs in Accept, one at a time, which is
// enough for the suite.
type Transport struct {
	Name string
	// Client and Server make a Socket of c within ctx; on failure they
	// close c. The Socket's Close must free everything made for it.
	Client func(ctx context.Context, c net.Conn) (transport.Socket, error)
	Server func(ctx context.Context, c net.Conn) (transport.Socket, error)

	// dialled holds every Socket Dial made, for Close. They are not
	// forgotten when they close, which a test's few allow: the Sockets
	// are Client's own, with the abilities it gives them, not wrappers.
	dialled dialled.Set
}

// String returns the Name.
func (t *Transport) String() string { return t.Name }

// MaxFrameSize reports the default limit, which the Sockets keep, for the
// suite's FrameTooLarge case.
func (t *Transport) MaxFrameSize() int { return transport.DefaultMaxFrameSize }

// Dial connects to addr and sets the connection up with Client.
func (t *Transport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if t.dialled.Closed() {
		return nil, transport.ErrClosed
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// The errors the contract asks of Dial: refused, or ctx's.
		return nil, netconn.DialError(ctx, err)
	}
	s, err := t.Client(ctx, c)
	if err != nil {
		return nil, err
	}
	if !t.dialled.Add(s) {
		s.Close()
		return nil, transport.ErrClosed
	}
	return s, nil
}

// Close closes every Socket Dial made (closing one again does nothing, by
// the Socket contract), and Dial fails with transport.ErrClosed
// afterwards.
func (t *Transport) Close() error {
	t.dialled.Close()
	return nil
}

// Listen binds addr; Accept sets each connection up with Server.
func (t *Transport) Listen(addr string) (transport.Listener, error) {
	nl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &listener{nl: nl, ctx: ctx, cancel: cancel, server: t.Server}, nil
}

type listener struct {
	nl net.Listener
	// ctx ends with Close, and with it a set-up under way in Accept.
	ctx    context.Context
	cancel context.CancelFunc
	server func(ctx context.Context, c net.Conn) (transport.Socket, error)
}

func (l *listener) Accept() (transport.Socket, error) {
	for {
		c, err := l.nl.Accept()
		if err != nil {
			if l.ctx.Err() != nil {
				return nil, transport.ErrClosed
			}
			return nil, err
		}
		s, err := l.server(l.ctx, c)
		if err == nil {
			return s, nil
		}
		if l.ctx.Err() != nil {
			return nil, transport.ErrClosed
		}
	}
}

func (l *listener) Close() error {
	l.cancel()
	return l.nl.Close()
}

func (l *listener) Addr() net.Addr { return l.nl.Addr() }
