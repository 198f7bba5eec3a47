// Package tlsexample is a server and a client in two processes that call
// Arith.Multiply over mux (yamux on TCP) with TLS. The server makes a
// self-signed certificate for 127.0.0.1 and localhost at start-up and
// writes it to a file, which the client trusts as its CA. In two shells,
// from the repository's root:
//
//	go run ./examples/tls/server -addr 127.0.0.1:7443 -ca /tmp/zerodial-ca.pem
//	go run ./examples/tls/client -addr 127.0.0.1:7443 -ca /tmp/zerodial-ca.pem
//
// The client prints "6 × 7 = 42"; the server logs the call with its TLS
// version. Without -ca the client trusts the system's CAs alone, and the
// call fails with the verification's own words ("tls: failed to verify
// certificate: x509: certificate signed by unknown authority"), exit status
// 1. The method is declared once, here, for both programs.
package tlsexample

import "github.com/zerodial/transport/dispatch"

// Args are the operands of Arith.Multiply.
type Args struct{ A, B int }

// Multiply is Arith.Multiply, declared once for the server and the client.
var Multiply = dispatch.NewMethod[Args, int]("Arith.Multiply")
