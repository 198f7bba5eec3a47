package preface

import (
	"crypto/tls"

	"github.com/zerodial/transport"
)

// DialWire returns the transport.Wire of a transport of protocol proto that
// dials with cfg (nil: no TLS). It has a client certificate to present when
// cfg holds one or can fetch one.
func DialWire(proto byte, cfg *tls.Config) transport.Wire {
	return transport.Wire{
		Protocol:   Of(proto).String(),
		TLS:        cfg != nil,
		ClientCert: cfg != nil && (len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil),
	}
}

// ListenWire returns the transport.Wire of a listener of protocol proto that
// serves with cfg (nil: no TLS). It requires a client certificate when
// cfg.ClientAuth refuses a client without one; VerifyClientCertIfGiven and
// weaker let such a client in.
func ListenWire(proto byte, cfg *tls.Config) transport.Wire {
	return transport.Wire{
		Protocol: Of(proto).String(),
		TLS:      cfg != nil,
		ClientCert: cfg != nil &&
			(cfg.ClientAuth == tls.RequireAnyClientCert || cfg.ClientAuth == tls.RequireAndVerifyClientCert),
	}
}
