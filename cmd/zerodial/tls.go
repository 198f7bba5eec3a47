package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
)

// tlsConfig returns the TLS configuration o's flags ask for, or nil when
// they ask for none.
func tlsConfig(o *options) (*tls.Config, error) {
	if !o.tls && o.cacert == "" && o.cert == "" && !strings.HasPrefix(o.addr, "https://") {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: o.serverName, MinVersion: tls.VersionTLS12}
	if o.cacert != "" {
		pem, err := os.ReadFile(o.cacert)
		if err != nil {
			return nil, usageErr("zerodial: -cacert: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErr("zerodial: -cacert: no PEM certificate in %s", o.cacert)
		}
		cfg.RootCAs = pool
	}
	if o.cert != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return nil, usageErr("zerodial: -cert/-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
