package mux

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// selfSigned returns a server configuration with a certificate for
// 127.0.0.1 made on the spot, and a client configuration trusting it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mux test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:   tls.VersionTLS13,
	}
	client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	return server, client
}

// TestTLS: sessions run over TLS when configured, the server name defaults
// to the dialled host, and a client that does not trust the server fails
// at Dial.
func TestTLS(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	srv := newTransport(t, transport.WithTLS(serverCfg))
	l := listen(t, srv)
	serveEcho(t, l)
	addr := l.Addr().String()

	tr := newTransport(t, transport.WithTLS(clientCfg))
	a := dial(t, tr, addr)
	b := dial(t, tr, addr)
	roundTrip(t, a, "over tls")
	roundTrip(t, b, "second stream, same session")
	assert.Equal(t, 1, tr.sessions())
	assert.Equal(t, addr, a.RemoteAddr().String())

	stranger := newTransport(t, transport.WithTLS(&tls.Config{MinVersion: tls.VersionTLS13}))
	_, err := stranger.Dial(t.Context(), addr)
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown, "a client must not trust an unknown certificate")

	// A plain client gets no session out of a TLS server: its streams fail.
	plain := newTransport(t)
	if s, err := plain.Dial(t.Context(), addr); err == nil {
		defer s.Close()
		s.SetDeadline(time.Now().Add(2 * time.Second))
		s.Send(&transport.Message{Body: []byte("plain")})
		err = s.Recv(&transport.Message{})
		assert.Error(t, err)
		assert.NotErrorIs(t, err, transport.ErrTimeout, "the server should drop the connection")
	}
}
