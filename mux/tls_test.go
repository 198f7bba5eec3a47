package mux

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/testcert"
)

func selfSigned(t *testing.T) (server, client *tls.Config) { return testcert.Configs(t) }

// TestTLS: sessions run over TLS when configured, the server name defaults
// to the dialled host, and a client that does not trust the server fails
// at Dial.
func TestTLS(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	srv := newTransport(t, WithTLS(serverCfg))
	l := listen(t, srv)
	serveEcho(t, l)
	addr := l.Addr().String()

	tr := newTransport(t, WithTLS(clientCfg))
	a := dial(t, tr, addr)
	b := dial(t, tr, addr)
	roundTrip(t, a, "over tls")
	roundTrip(t, b, "second stream, same session")
	assert.Equal(t, 1, tr.sessions())
	assert.Equal(t, addr, a.RemoteAddr().String())

	stranger := newTransport(t, WithTLS(&tls.Config{MinVersion: tls.VersionTLS13}))
	_, err := stranger.Dial(t.Context(), addr)
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown, "a client must not trust an unknown certificate")

	// A plain client gets no session out of a TLS server: its streams fail.
	plain := newTransport(t)
	if s, err := plain.Dial(t.Context(), addr); err == nil {
		defer s.Close()
		s.SetDeadline(time.Now().Add(waitLong))
		s.Send(&transport.Message{Body: []byte("plain")})
		err = s.Recv(&transport.Message{})
		assert.Error(t, err)
		assert.NotErrorIs(t, err, transport.ErrTimeout, "the server should drop the connection")
	}
}
