package transport_test

import (
	"crypto/tls"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The abilities (optional interfaces) of this module's transports, which
// the conformance suite holds each one to: what dispatch's shortcut
// decides by, on every Transport and Listener; and the Sockets' — tcp's
// have every one, mux's all but FrameWaiter, memory's FrameWaiter alone.
const (
	shortcutAbilities = transporttest.TransportFrameLimiter | transporttest.TransportWireReporter |
		transporttest.ListenerFrameLimiter | transporttest.ListenerClosedReporter | transporttest.ListenerWireReporter
	memoryAbilities = shortcutAbilities | transporttest.TransportAddrSpacer | transporttest.ListenerAddrSpacer |
		transporttest.SocketFrameWaiter
	tcpAbilities = shortcutAbilities | transporttest.AllSocketAbilities
	muxAbilities = tcpAbilities &^ transporttest.SocketFrameWaiter
)

func TestConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			return memory.New(), ""
		}, memoryAbilities)
	})
	t.Run("tcp", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			return tcp.New(), "127.0.0.1:0"
		}, tcpAbilities)
	})
	t.Run("tcp+TLS", func(t *testing.T) {
		cfg := mutualTLS(t)
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			return tcp.New(tcp.WithTLS(cfg)), "127.0.0.1:0"
		}, tcpAbilities)
	})
}

// mutualTLS returns one configuration for both ends of a connection, as
// WithTLS takes it: a certificate for 127.0.0.1 that each end presents and
// trusts, the server requiring the client's.
func mutualTLS(t *testing.T) *tls.Config {
	server, client, err := testcert.Make(true)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Clone()
	cfg.RootCAs = client.RootCAs
	return cfg
}
