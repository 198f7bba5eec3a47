// Command server serves Arith.Multiply over mux with TLS, on a self-signed
// certificate it makes at start-up and writes to the file -ca names, for
// the client to trust. It prints the address it listens on, and stops
// gracefully on an interrupt (SIGINT or SIGTERM). See package tlsexample.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zerodial/transport/dispatch"
	tlsexample "github.com/zerodial/transport/examples/tls"
	"github.com/zerodial/transport/mux"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7443", "the address to listen on")
	caFile := flag.String("ca", "zerodial-ca.pem", "where to write the certificate the client trusts")
	flag.Parse()
	if err := run(*addr, *caFile); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run(addr, caFile string) error {
	cert, certPEM, err := selfSigned()
	if err != nil {
		return err
	}
	if err := os.WriteFile(caFile, certPEM, 0o644); err != nil {
		return err
	}

	srv := dispatch.NewServer()
	err = tlsexample.Multiply.Handle(srv, func(ctx context.Context, args *tlsexample.Args, reply *int) error {
		info, _ := dispatch.CallInfoFrom(ctx) // info.TLS is the connection's verified state
		if info.TLS == nil {
			return &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "TLS only"}
		}
		slog.Info("call", "method", info.Method, "peer", info.RemoteAddr, "tls", tls.VersionName(info.TLS.Version))
		*reply = args.A * args.B
		return nil
	})
	if err != nil {
		return err
	}

	tr := mux.New(mux.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}))
	defer tr.Close()
	l, err := tr.Listen(addr)
	if err != nil {
		return err
	}
	if err := srv.Start(l); err != nil {
		return err
	}
	fmt.Printf("listening on %s, with the certificate in %s\n", l.Addr(), caFile)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	// Calls in flight finish; new ones are refused with CodeUnavailable.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost, valid for
// a day, signed by its own key: the client trusts it as a CA.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "zerodial TLS example"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, certPEM, nil
}
