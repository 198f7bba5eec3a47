package dispatch_test

import (
	"context"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// The conformance suite (dispatchtest) over each path of this package:
// its bindings, each a few lines.

// dialed serves srv on a listener of st and returns the Caller of a
// Client dialled over ct with opts.
func dialed(t *testing.T, srv *dispatch.Server, st, ct transport.Transport, listen string, opts ...dispatch.ClientOption) dispatchtest.Caller {
	l, err := st.Listen(listen)
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	c, err := dispatch.Dial(context.Background(), ct, l.Addr().String(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return dispatchtest.ClientCaller(c)
}

// otherProtocol dials, over ct, a listener of srv on other's transport.
func otherProtocol(t *testing.T, srv *dispatch.Server, other, ct transport.Transport, opts ...dispatch.ClientOption) error {
	return otherProtocolAt(t, srv, other, ct, "127.0.0.1:0", opts...)
}

// otherProtocolAt is otherProtocol with other's listener at listen.
func otherProtocolAt(t *testing.T, srv *dispatch.Server, other, ct transport.Transport, listen string, opts ...dispatch.ClientOption) error {
	l, err := other.Listen(listen)
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() { l.Close() })
	c, err := dispatch.Dial(context.Background(), ct, l.Addr().String(), opts...)
	if c != nil {
		c.Close()
	}
	return err
}

// newMux is a mux Transport closed when the test ends.
func newMux(t *testing.T, opts ...mux.Option) *mux.Transport {
	m := mux.New(opts...)
	t.Cleanup(func() { m.Close() })
	return m
}

// oneLimit is the one frame limit of memory's two ends: the smaller of
// the two a case asks for (dispatchtest.OneFrameLimit).
func oneLimit(l dispatchtest.Limits) []memory.Option {
	n := l.Server
	if n == 0 || (l.Client != 0 && l.Client < n) {
		n = l.Client
	}
	return memoryLimit(n)
}

// countingLimited is a countingTransport that passes on its transport's
// frame limit, which the shortcut keeps to.
type countingLimited struct{ countingTransport }

func (c *countingLimited) MaxFrameSize() int {
	return c.Transport.(transport.FrameLimiter).MaxFrameSize()
}

// shortcutBinding is the shortcut in mode, to a Server listening on
// memory, which a synctest bubble can hold, or on tcp when a case asks for
// two frame limits: no socket is dialled.
func shortcutBinding(p dispatchtest.Profile, mode dispatch.ShortcutMode) dispatchtest.Binding {
	opt := dispatch.WithShortcut(mode)
	return dispatchtest.Binding{
		Profile: p,
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			if l == (dispatchtest.Limits{}) {
				m := memory.New()
				ct := countMemory(m)
				t.Cleanup(func() { require.Zero(t, ct.dials.Load(), "the shortcut dialled a socket") })
				return dialed(t, srv, m, ct, "", opt)
			}
			ct := &countingLimited{countingTransport{Transport: tcp.New(tcpLimit(l.Client)...)}}
			t.Cleanup(func() { require.Zero(t, ct.dials.Load(), "the shortcut dialled a socket") })
			return dialed(t, srv, tcp.New(tcpLimit(l.Server)...), ct, "127.0.0.1:0", opt)
		},
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			return otherProtocol(t, srv, newMux(t), &countingTransport{Transport: tcp.New()}, opt)
		},
		Bubble: true,
	}
}

// conformanceBindings are the five paths of zerodial's Client.
var conformanceBindings = []dispatchtest.Binding{
	{
		Profile: dispatchtest.Memory,
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			m := memory.New(oneLimit(l)...)
			return dialed(t, srv, m, m, "")
		},
		Bubble: true,
	},
	{
		Profile: dispatchtest.TCP,
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			return dialed(t, srv, tcp.New(tcpLimit(l.Server)...), tcp.New(tcpLimit(l.Client)...), "127.0.0.1:0")
		},
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			return otherProtocol(t, srv, newMux(t), tcp.New())
		},
	},
	{
		Profile: dispatchtest.Mux,
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			return dialed(t, srv, newMux(t, muxLimit(l.Server)...), newMux(t, muxLimit(l.Client)...), "127.0.0.1:0")
		},
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			return otherProtocol(t, srv, tcp.New(), newMux(t))
		},
	},
	shortcutBinding(dispatchtest.ShortcutCopy, dispatch.ShortcutCopy),
	shortcutBinding(dispatchtest.ShortcutDirect, dispatch.ShortcutDirect),
}

// unixBindings are tcp and mux over a unix socket ("unix:PATH",
// docs/unix.md): the same wire as over TCP, so the same profiles, under
// names of their own.
var unixBindings = []dispatchtest.Binding{
	{
		Profile: unixProfile(dispatchtest.TCP),
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			return dialed(t, srv, tcp.New(tcpLimit(l.Server)...), tcp.New(tcpLimit(l.Client)...), unixAddr(t))
		},
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			return otherProtocolAt(t, srv, newMux(t), tcp.New(), unixAddr(t))
		},
	},
	{
		Profile: unixProfile(dispatchtest.Mux),
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			return dialed(t, srv, newMux(t, muxLimit(l.Server)...), newMux(t, muxLimit(l.Client)...), unixAddr(t))
		},
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			return otherProtocolAt(t, srv, tcp.New(), newMux(t), unixAddr(t))
		},
	},
}

// unixProfile is p's path over a unix socket: p's differences, the name
// p's and "-unix".
func unixProfile(p dispatchtest.Profile) dispatchtest.Profile {
	return dispatchtest.Profile{Name: p.Name + "-unix", Differences: p.Differences}
}

// netrpcBinding is a Server reached through ServeCodec with the server
// codec k makes, by a Client over k's client codec (DialCodec), each
// reading at most the limit a case asks for.
func netrpcBinding(p dispatchtest.Profile, k *netrpcCodec) dispatchtest.Binding {
	return dispatchtest.Binding{
		Profile: p,
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			_, c := netrpcServe(t, k, srv, l.Server, l.Client)
			return dispatchtest.ClientCaller(c)
		},
		// A listener of zerodial's wire, dialled and called over net/rpc.
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			tr := tcp.New()
			l, err := tr.Listen("127.0.0.1:0")
			require.NoError(t, err)
			require.NoError(t, srv.Start(l))
			t.Cleanup(func() { l.Close() })
			c, err := dispatch.DialCodec(context.Background(), nil, "tcp", l.Addr().String(), func(conn io.ReadWriteCloser) rpc.ClientCodec { return k.client(conn, 0) })
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			return c.Call(ctx, "Arith.Multiply", Args{2, 3}, new(int))
		},
	}
}

// jsonrpcCodec is net/rpc/jsonrpc's codecs, which bound nothing: the limits
// a case asks for are not theirs to keep (dispatchtest.JSONCodec).
var jsonrpcCodec = &netrpcCodec{
	server: func(conn net.Conn, _ int) rpc.ServerCodec { return jsonrpc.NewServerCodec(conn) },
	client: func(conn io.ReadWriteCloser, _ int) rpc.ClientCodec { return jsonrpc.NewClientCodec(conn) },
}

// TestConformance runs the suite on the five paths of zerodial's Client,
// on tcp and mux over unix sockets, and on the net/rpc codecs'.
func TestConformance(t *testing.T) {
	for _, b := range append(append(conformanceBindings, unixBindings...), netrpcBinding(dispatchtest.NetRPCGob, gobCodec), netrpcBinding(dispatchtest.NetRPCJSON, jsonrpcCodec)) {
		t.Run(b.Name(), func(t *testing.T) { dispatchtest.Run(t, b) })
	}
}
