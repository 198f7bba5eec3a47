// Package testcert makes a self-signed TLS certificate for 127.0.0.1 on the
// spot, for the tests of the transports that speak TLS.
package testcert

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
)

// Configs returns a server configuration with a new certificate for
// 127.0.0.1 and a client configuration that trusts it (TLS 1.3).
func Configs(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	server, client, err := Make(false)
	if err != nil {
		t.Fatal(err)
	}
	return server, client
}

// Make returns what Configs does, for callers without a testing.TB (the
// examples). With mutual, the server also requires and verifies a client
// certificate, and the client presents the same one, which is valid for
// both ends (mutual TLS).
func Make(mutual bool) (server, client *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "zerodial test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	pair := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
	server = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	if mutual {
		server.ClientAuth = tls.RequireAndVerifyClientCert
		server.ClientCAs = pool
		client.Certificates = []tls.Certificate{pair}
	}
	return server, client, nil
}
