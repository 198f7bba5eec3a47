package dispatch_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// The shortcut connects a Client only to a listener that would accept it on
// the network: the same protocol, TLS on both ends or neither, a client
// certificate where the listener requires one. Otherwise the Client dials,
// and meets the network's refusal at Dial, as it would in two processes.
func TestShortcutRefusesWhatTheNetworkRefuses(t *testing.T) {
	serverTLS, clientTLS := testcert.Configs(t)
	requireCert := serverTLS.Clone()
	requireCert.ClientAuth = tls.RequireAnyClientCert
	withCert := clientTLS.Clone()
	withCert.Certificates = serverTLS.Certificates

	muxOf := func(t *testing.T, opts ...mux.Option) transport.Transport {
		tr := mux.New(opts...)
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	tcpOf := func(_ *testing.T, opts ...tcp.Option) transport.Transport { return tcp.New(opts...) }
	cases := []struct {
		name     string
		listen   func(t *testing.T) transport.Transport
		dial     func(t *testing.T) transport.Transport
		shortcut bool // the call goes through the shortcut; else Dial fails
	}{
		{"tcp to tcp", func(t *testing.T) transport.Transport { return tcpOf(t) }, func(t *testing.T) transport.Transport { return tcpOf(t) }, true},
		{"mux to mux", func(t *testing.T) transport.Transport { return muxOf(t) }, func(t *testing.T) transport.Transport { return muxOf(t) }, true},
		{"mux client, tcp listener", func(t *testing.T) transport.Transport { return tcpOf(t) }, func(t *testing.T) transport.Transport { return muxOf(t) }, false},
		{"tcp client, mux listener", func(t *testing.T) transport.Transport { return muxOf(t) }, func(t *testing.T) transport.Transport { return tcpOf(t) }, false},
		{"plain client, TLS listener", func(t *testing.T) transport.Transport { return tcpOf(t, tcp.WithTLS(serverTLS)) }, func(t *testing.T) transport.Transport { return tcpOf(t) }, false},
		{"TLS client, plain listener", func(t *testing.T) transport.Transport { return muxOf(t) }, func(t *testing.T) transport.Transport { return muxOf(t, mux.WithTLS(clientTLS)) }, false},
		{"TLS on both", func(t *testing.T) transport.Transport { return muxOf(t, mux.WithTLS(serverTLS)) }, func(t *testing.T) transport.Transport { return muxOf(t, mux.WithTLS(clientTLS)) }, true},
		{"client certificate required, none offered", func(t *testing.T) transport.Transport { return tcpOf(t, tcp.WithTLS(requireCert)) }, func(t *testing.T) transport.Transport { return tcpOf(t, tcp.WithTLS(clientTLS)) }, false},
		{"client certificate required and offered", func(t *testing.T) transport.Transport { return tcpOf(t, tcp.WithTLS(requireCert)) }, func(t *testing.T) transport.Transport { return tcpOf(t, tcp.WithTLS(withCert)) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := whoServer(t, "served")
			l, err := tc.listen(t).Listen("127.0.0.1:0")
			require.NoError(t, err)
			require.NoError(t, srv.Start(l))
			tr := &countingTransport{Transport: tc.dial(t)}
			for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutCopy, dispatch.ShortcutDirect} {
				tr.dials.Store(0)
				c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(mode))
				if !tc.shortcut {
					require.Error(t, err, "%s: the shortcut accepted what the network refuses", mode)
					assert.Equal(t, int32(1), tr.dials.Load(), "%s: the client did not try the network", mode)
					continue
				}
				require.NoError(t, err)
				got, err := who(c)
				require.NoError(t, err)
				assert.Equal(t, "served", got)
				assert.Zero(t, tr.dials.Load(), "%s: the shortcut was not taken", mode)
				c.Close()
			}
		})
	}
}

// A wrapper that does not pass on what its transport speaks
// (transport.WireReporter) cannot be matched with a listener that says
// what it speaks: its Client uses the network, which works.
func TestShortcutNeedsTheClientsWire(t *testing.T) {
	srv := whoServer(t, "served")
	l, err := tcp.New().Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	tr := &trackedTransport{Transport: tcp.New()} // no Wire method
	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutCopy))
	require.NoError(t, err)
	defer c.Close()
	got, err := who(c)
	require.NoError(t, err)
	assert.Equal(t, "served", got)
	assert.Equal(t, int32(1), tr.dials.Load(), "the call went through the shortcut")
}

// aliasListener reports another listener's address and no Wire, as a
// listener for one session over an accepted connection does.
type aliasListener struct {
	transport.Listener
	addr net.Addr
}

func (a aliasListener) Addr() net.Addr { return a.addr }

// A Server serving a listener that says nothing of what it speaks, at the
// address of one that does, leaves the shortcut to the latter as it was.
func TestListenerWithoutWireHidesNoEntry(t *testing.T) {
	srv := whoServer(t, "real")
	tr := &countingTransport{Transport: tcp.New()}
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))

	other := whoServer(t, "alias")
	inner, err := memory.New().Listen("")
	require.NoError(t, err)
	alias := aliasListener{Listener: inner, addr: l.Addr()}
	require.NoError(t, other.Start(alias))

	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutCopy))
	require.NoError(t, err)
	defer c.Close()
	got, err := who(c)
	require.NoError(t, err)
	assert.Equal(t, "real", got)
	require.NoError(t, alias.Close())
	got, err = who(c)
	require.NoError(t, err)
	assert.Equal(t, "real", got)
	assert.Zero(t, tr.dials.Load(), "the shortcut was lost")
}
