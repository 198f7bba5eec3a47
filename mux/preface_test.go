package mux

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/preface/prefacetest"
	"github.com/zerodial/transport/tcp"
)

// suite runs the preface tests mux shares with tcp against mux, with a tcp
// listener for the other protocol.
var suite = prefacetest.Suite{
	Proto: prefacetest.Mux,
	Other: prefacetest.TCP,
	Dial: func(t *testing.T, ctx context.Context, addr string, cfg prefacetest.Config) (transport.Socket, error) {
		return newTransport(t, suiteOptions(cfg)...).Dial(ctx, addr)
	},
	Listen: func(t *testing.T, cfg prefacetest.Config) transport.Listener {
		return listen(t, newTransport(t, suiteOptions(cfg)...))
	},
	OtherListen: func(t *testing.T, cfg prefacetest.Config) transport.Listener {
		l, err := tcp.New(tcp.WithTLS(cfg.TLS), tcp.WithLogger(cfg.Logger)).Listen("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l
	},
}

// suiteOptions turns a suite's Config into mux's options.
func suiteOptions(cfg prefacetest.Config) []Option {
	opts := []Option{WithTLS(cfg.TLS), WithLogger(cfg.Logger), WithFallback(cfg.Fallback)}
	if cfg.HandshakeTimeout != 0 {
		opts = append(opts, WithHandshakeTimeout(cfg.HandshakeTimeout))
	}
	return opts
}

// TestDialTCPListener: a mux client dialling a tcp listener fails at Dial,
// naming what the listener speaks, and keeps no session of it.
func TestDialTCPListener(t *testing.T) {
	s := suite
	var dialled []*Transport
	s.Dial = func(t *testing.T, ctx context.Context, addr string, cfg prefacetest.Config) (transport.Socket, error) {
		tr := newTransport(t, WithTLS(cfg.TLS), WithLogger(cfg.Logger))
		dialled = append(dialled, tr)
		return tr.Dial(ctx, addr)
	}
	prefacetest.DialOtherListener(t, s)
	for _, tr := range dialled {
		assert.Zero(t, tr.sessions(), "a failed session is not kept")
	}
}

func TestDialSilentPeer(t *testing.T)      { prefacetest.DialSilentPeer(t, suite) }
func TestDialForeignPeer(t *testing.T)     { prefacetest.DialForeignPeer(t, suite) }
func TestDialVersionMismatch(t *testing.T) { prefacetest.DialVersionMismatch(t, suite) }
func TestDialPeerClosesFirst(t *testing.T) { prefacetest.DialPeerClosesFirst(t, suite) }

// TestListenerDropsBadClients: bad clients get no session; only the good
// client's remains.
func TestListenerDropsBadClients(t *testing.T) {
	l := prefacetest.ListenerDropsBadClients(t, suite).(*listener)
	l.mu.Lock()
	assert.Len(t, l.sessions, 1, "server sessions: the good client's only")
	l.mu.Unlock()
}

func TestListenerCloseEndsPreface(t *testing.T) { prefacetest.ListenerCloseEndsPreface(t, suite) }

func TestWire(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	assert.Equal(t, transport.Wire{Protocol: "mux/1"}, New().Wire())
	assert.Equal(t, transport.Wire{Protocol: "mux/1", TLS: true}, New(WithTLS(clientCfg)).Wire())
	withCert := clientCfg.Clone()
	withCert.Certificates = serverCfg.Certificates
	assert.Equal(t, transport.Wire{Protocol: "mux/1", TLS: true, ClientCert: true}, New(WithTLS(withCert)).Wire())

	for cfg, want := range map[*tls.Config]transport.Wire{
		nil:                                    {Protocol: "mux/1"},
		serverCfg:                              {Protocol: "mux/1", TLS: true},
		{ClientAuth: tls.RequireAnyClientCert}: {Protocol: "mux/1", TLS: true, ClientCert: true},
		{ClientAuth: tls.VerifyClientCertIfGiven}: {Protocol: "mux/1", TLS: true},
	} {
		l := listen(t, newTransport(t, WithTLS(cfg)))
		assert.Equal(t, want, l.(transport.WireReporter).Wire())
	}
}

func TestFallbackServesBoth(t *testing.T) { prefacetest.FallbackServesBoth(t, suite) }
func TestFallbackRefusesZerodialMismatch(t *testing.T) {
	prefacetest.FallbackRefusesZerodialMismatch(t, suite)
}
func TestFallbackDropsSilent(t *testing.T)    { prefacetest.FallbackDropsSilent(t, suite) }
func TestFallbackCloseEndsSniff(t *testing.T) { prefacetest.FallbackCloseEndsSniff(t, suite) }
func TestFallbackTLS(t *testing.T)            { prefacetest.FallbackTLS(t, suite) }
