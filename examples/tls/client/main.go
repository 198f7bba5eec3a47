// Command client calls Arith.Multiply over mux with TLS, trusting the CA
// certificate in the file -ca names (the server's, in this example) or,
// without -ca, the system's CAs alone. It prints the product, or the error
// and exits with status 1. See package tlsexample.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/zerodial/transport/dispatch"
	tlsexample "github.com/zerodial/transport/examples/tls"
	"github.com/zerodial/transport/mux"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7443", "the server's address")
	caFile := flag.String("ca", "", "a PEM file of the CA certificates to trust (default: the system's)")
	flag.Parse()
	if err := run(*addr, *caFile); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(addr, caFile string) error {
	cfg := &tls.Config{MinVersion: tls.VersionTLS13} // the server's name is taken from addr
	if caFile != "" {
		pemCerts, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pemCerts) {
			return errors.New("no PEM certificate in " + caFile)
		}
	}
	tr := mux.New(mux.WithTLS(cfg))
	defer tr.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dispatch.Dial(ctx, tr, addr) // TLS, then the preface: a certificate not trusted fails here
	if err != nil {
		return err
	}
	defer c.Close()
	product, err := tlsexample.Multiply.Call(ctx, c, tlsexample.Args{A: 6, B: 7})
	if err != nil {
		return err
	}
	fmt.Printf("6 × 7 = %d\n", product)
	return nil
}
