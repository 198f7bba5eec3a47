// Package prefacetest holds the tests of the connection preface (WIRE.md,
// section 2) that the tcp and mux transports share: how Dial fails against
// a peer of the other protocol, a silent one, a foreign one, one of
// another version or one that closes first, and how a listener drops such
// clients. Each body is written once here and run by both transports'
// tests with their own Dial and Listen (a Suite), so the two cannot drift
// apart. It is not part of transporttest: the preface is this module's
// wire format, not the transport.Transport contract that suite checks.
package prefacetest

import (
	"context"
	"crypto/tls"
	"log/slog"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/fallback"
)

// Protocol is a transport's protocol as the wire and the errors name it.
type Protocol struct {
	// Name starts the transport's errors ("tcp: ...") and names the
	// protocol in them ("tcp/1").
	Name string
	// Preface is the connection preface of version 1 that an end with
	// the default options sends, as WIRE.md spells it out: it announces
	// that it accepts S2-compressed frames (capability 0x01).
	Preface string
}

// The two protocols, spelled out rather than built with package preface,
// so that the tests check its bytes rather than repeat them.
var (
	TCP = Protocol{Name: "tcp", Preface: "ZDIALt\x01\x01"}
	Mux = Protocol{Name: "mux", Preface: "ZDIALm\x01\x01"}
)

// version2 returns p's preface with version 2, which no peer of this
// module speaks.
func (p Protocol) version2() string { return p.Preface[:6] + "\x02\x00" }

// Config is what a body asks of the Transports it has made: each
// transport's tests turn it into their own package's options (WithTLS,
// WithLogger, WithHandshakeTimeout). The zero Config asks for the
// defaults.
type Config struct {
	// TLS, when not nil, is given to WithTLS.
	TLS *tls.Config
	// Logger, when not nil, is given to WithLogger.
	Logger *slog.Logger
	// HandshakeTimeout, when not zero, is given to WithHandshakeTimeout,
	// so that a test of a silent peer need not wait ten seconds.
	HandshakeTimeout time.Duration
	// Fallback, when not nil, is given to WithFallback.
	Fallback *fallback.Listener
}

// Suite is the transport under test, as the bodies need it.
type Suite struct {
	// Proto is the transport's protocol; Other is the other transport's,
	// whose listeners OtherListen makes.
	Proto, Other Protocol
	// Dial dials addr with a new Transport made as cfg says. The
	// Transport is closed when the test ends.
	Dial func(t *testing.T, ctx context.Context, addr string, cfg Config) (transport.Socket, error)
	// Listen listens on a free loopback port with a new Transport made as
	// cfg says. The listener is closed when the test ends.
	Listen func(t *testing.T, cfg Config) transport.Listener
	// OtherListen does as Listen with the other transport.
	OtherListen func(t *testing.T, cfg Config) transport.Listener
}

// speaks is the error Dial of s returns for a peer at addr that sent the
// preface of got ("mux/1").
func (s Suite) speaks(addr, got string) string {
	return s.Proto.Name + ": " + addr + " speaks zerodial " + got + ", not " + s.Proto.Name + "/1"
}
