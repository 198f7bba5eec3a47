package tcp_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/preface/prefacetest"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// suite runs the preface tests tcp shares with mux against tcp, with a mux
// listener for the other protocol.
var suite = prefacetest.Suite{
	Proto: prefacetest.TCP,
	Other: prefacetest.Mux,
	Dial: func(t *testing.T, ctx context.Context, addr string, cfg prefacetest.Config) (transport.Socket, error) {
		return tcp.New(options(cfg)...).Dial(ctx, addr)
	},
	Listen: func(t *testing.T, cfg prefacetest.Config) transport.Listener {
		l, err := tcp.New(options(cfg)...).Listen("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l
	},
	OtherListen: func(t *testing.T, cfg prefacetest.Config) transport.Listener {
		tr := mux.New(mux.WithTLS(cfg.TLS), mux.WithLogger(cfg.Logger))
		t.Cleanup(func() { tr.Close() })
		l, err := tr.Listen("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l
	},
}

// options turns a suite's Config into tcp's options.
func options(cfg prefacetest.Config) []tcp.Option {
	opts := []tcp.Option{tcp.WithTLS(cfg.TLS), tcp.WithLogger(cfg.Logger), tcp.WithFallback(cfg.Fallback)}
	if cfg.HandshakeTimeout != 0 {
		opts = append(opts, tcp.WithHandshakeTimeout(cfg.HandshakeTimeout))
	}
	return opts
}

func TestDialMuxListener(t *testing.T)          { prefacetest.DialOtherListener(t, suite) }
func TestDialSilentPeer(t *testing.T)           { prefacetest.DialSilentPeer(t, suite) }
func TestDialForeignPeer(t *testing.T)          { prefacetest.DialForeignPeer(t, suite) }
func TestDialVersionMismatch(t *testing.T)      { prefacetest.DialVersionMismatch(t, suite) }
func TestDialPeerClosesFirst(t *testing.T)      { prefacetest.DialPeerClosesFirst(t, suite) }
func TestListenerDropsBadClients(t *testing.T)  { prefacetest.ListenerDropsBadClients(t, suite) }
func TestListenerCloseEndsPreface(t *testing.T) { prefacetest.ListenerCloseEndsPreface(t, suite) }

// TestListenerCloseClosesPending: Close closes the connections set up but
// not yet accepted, as it does those being set up
// (TestListenerCloseEndsPreface), and ends its goroutines (TestMain checks
// that none leaks).
func TestListenerCloseClosesPending(t *testing.T) {
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)

	c, err := tr.Dial(t.Context(), l.Addr().String()) // set up, never accepted
	require.NoError(t, err)
	defer c.Close()

	require.NoError(t, l.Close())
	// c's Dial may have returned before the listener read c's preface;
	// closed with it unread, c sees a reset rather than EOF.
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang guard: the close comes at once
	prefacetest.AssertClosedByPeer(t, c.Recv(&transport.Message{}), "the connection awaiting Accept")
	_, err = l.Accept()
	assert.ErrorIs(t, err, transport.ErrClosed)
}

// TestAcceptBacklog: a listener nobody accepts from holds a bounded number
// of connections; past it, Dial waits (here, until its ctx ends), and
// Accept makes room again.
func TestAcceptBacklog(t *testing.T) {
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	n := 0
	for ; n < 1000; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		c, err := tr.Dial(ctx, l.Addr().String())
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			break
		}
		defer c.Close()
	}
	require.Less(t, n, 1000, "the backlog is not bounded")
	t.Logf("%d connections held before Dial waits", n)

	// The Dial that gave up is still in the kernel's backlog, and takes
	// the first slot Accept frees (its preface is there to read): make two.
	for range 2 {
		s, err := l.Accept()
		require.NoError(t, err)
		s.Close()
	}
	c, err := tr.Dial(t.Context(), l.Addr().String())
	require.NoError(t, err, "Accept made no room")
	c.Close()
}

func TestWire(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	assert.Equal(t, transport.Wire{Protocol: "tcp/1"}, tcp.New().Wire())
	assert.Equal(t, transport.Wire{Protocol: "tcp/1", TLS: true}, tcp.New(tcp.WithTLS(clientCfg)).Wire())
	withCert := clientCfg.Clone()
	withCert.Certificates = serverCfg.Certificates
	assert.Equal(t, transport.Wire{Protocol: "tcp/1", TLS: true, ClientCert: true}, tcp.New(tcp.WithTLS(withCert)).Wire())

	for cfg, want := range map[*tls.Config]transport.Wire{
		nil:       {Protocol: "tcp/1"},
		serverCfg: {Protocol: "tcp/1", TLS: true},
		{ClientAuth: tls.RequireAndVerifyClientCert}: {Protocol: "tcp/1", TLS: true, ClientCert: true},
		{ClientAuth: tls.VerifyClientCertIfGiven}:    {Protocol: "tcp/1", TLS: true},
	} {
		l, err := tcp.New(tcp.WithTLS(cfg)).Listen("127.0.0.1:0")
		require.NoError(t, err)
		assert.Equal(t, want, l.(transport.WireReporter).Wire())
		l.Close()
	}
	assert.True(t, tcp.New().Wire().Accepts(tcp.New().Wire()))
	assert.False(t, mux.New().Wire().Accepts(tcp.New().Wire()), "mux/1 and tcp/1 differ")
}

func TestFallbackServesBoth(t *testing.T) { prefacetest.FallbackServesBoth(t, suite) }
func TestFallbackRefusesZerodialMismatch(t *testing.T) {
	prefacetest.FallbackRefusesZerodialMismatch(t, suite)
}
func TestFallbackDropsSilent(t *testing.T)    { prefacetest.FallbackDropsSilent(t, suite) }
func TestFallbackCloseEndsSniff(t *testing.T) { prefacetest.FallbackCloseEndsSniff(t, suite) }
func TestFallbackTLS(t *testing.T)            { prefacetest.FallbackTLS(t, suite) }
