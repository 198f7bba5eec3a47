package netconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/preface"
	"github.com/zerodial/transport/internal/testcert"
)

type result struct {
	c   net.Conn
	err error
}

// serve runs srv.Server on c on a goroutine and yields what it returns.
func serve(ctx context.Context, srv Setup, c net.Conn) <-chan result {
	ch := make(chan result, 1)
	go func() {
		sc, _, err := srv.Server(ctx, c, "client")
		ch <- result{sc, err}
	}()
	return ch
}

// TestSetup: Client and Server set a connection up, with TLS and without,
// and hand it on with nothing of the set-up left to read.
func TestSetup(t *testing.T) {
	serverCfg, clientCfg := testcert.Configs(t)
	for name, tc := range map[string]struct{ client, server *tls.Config }{
		"plain": {nil, nil},
		"tls":   {clientCfg, serverCfg},
	} {
		t.Run(name, func(t *testing.T) {
			c, s := tcpPair(t)
			srv := serve(t.Context(), Setup{Proto: preface.TCP, TLS: tc.server, Timeout: waitLong}, s)
			// No ServerName: it defaults to the host dialled, for which
			// the certificate is made.
			cc, _, err := Setup{Proto: preface.TCP, TLS: tc.client, Timeout: waitLong}.Client(t.Context(), c, c.RemoteAddr().String())
			require.NoError(t, err)
			r := <-srv
			require.NoError(t, r.err)
			_, isTLS := cc.(*tls.Conn)
			assert.Equal(t, tc.client != nil, isTLS)

			go r.c.Write([]byte("next"))
			buf := make([]byte, 4)
			_, err = io.ReadFull(cc, buf)
			require.NoError(t, err)
			assert.Equal(t, "next", string(buf))
		})
	}
	assert.Empty(t, clientCfg.ServerName, "the caller's configuration is not changed")
}

// TestSetupMismatch: each end names what the other speaks, and the client
// closes its connection.
func TestSetupMismatch(t *testing.T) {
	c, s := tcpPair(t)
	srv := serve(t.Context(), Setup{Proto: preface.Mux, Timeout: waitLong}, s)
	_, _, err := Setup{Proto: preface.TCP, Timeout: waitLong}.Client(t.Context(), c, "server")
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "tcp: server speaks zerodial mux/1, not tcp/1")
	assertClosed(t, c)
	r := <-srv
	assert.EqualError(t, r.err, "mux: client speaks zerodial tcp/1, not mux/1")
	assert.Same(t, s, r.c, "the server hands back the connection to close")
}

// TestSetupClientTLSFails: a server the client does not trust fails the
// client's handshake, with the transport's words; the server's side is a
// *TLSError.
func TestSetupClientTLSFails(t *testing.T) {
	serverCfg, _ := testcert.Configs(t)
	c, s := tcpPair(t)
	srv := serve(t.Context(), Setup{Proto: preface.Mux, TLS: serverCfg, Timeout: waitLong}, s)
	_, _, err := Setup{Proto: preface.Mux, TLS: &tls.Config{}, Timeout: waitLong}.Client(t.Context(), c, c.RemoteAddr().String())
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
	assert.Contains(t, err.Error(), "mux: tls handshake with "+c.RemoteAddr().String()+": ")
	assertClosed(t, c)

	r := <-srv
	var te *TLSError
	require.ErrorAs(t, r.err, &te)
	assert.Equal(t, "mux", te.Transport)
	assert.Contains(t, r.err.Error(), "mux: tls handshake: ")
	r.c.Close()
}

// TestSetupTLSTimeout: a silent peer holds neither end's TLS handshake
// longer than its bound; a server's is ServerTLSTimeout when set.
func TestSetupTLSTimeout(t *testing.T) {
	serverCfg, clientCfg := testcert.Configs(t)
	c, _ := tcpPair(t)
	start := time.Now()
	_, _, err := Setup{Proto: preface.TCP, TLS: clientCfg, Timeout: 100 * time.Millisecond}.Client(context.Background(), c, c.RemoteAddr().String())
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, time.Since(start), belowTimeout)

	for _, srv := range []Setup{
		{Proto: preface.TCP, TLS: serverCfg, Timeout: 100 * time.Millisecond},
		{Proto: preface.TCP, TLS: serverCfg, Timeout: time.Minute, ServerTLSTimeout: 100 * time.Millisecond},
	} {
		_, s := tcpPair(t)
		start := time.Now()
		sc, _, err := srv.Server(context.Background(), s, "client")
		var te *TLSError
		assert.ErrorAs(t, err, &te)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), belowTimeout)
		sc.Close()
	}
}

// TestSetupServerContext: the server's ctx (mux's listener's, which Close
// ends) cuts the preface exchange short.
func TestSetupServerContext(t *testing.T) {
	_, s := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	sc, _, err := Setup{Proto: preface.Mux, Timeout: time.Minute}.Server(ctx, s, "client")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), belowTimeout)
	sc.Close()
}

// assertClosed checks that c was closed here.
func assertClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := c.Read(make([]byte, 1))
	assert.True(t, errors.Is(err, net.ErrClosed), "the connection is still open: %v", err)
}

// TestSetupPlaintextToTLS: a plaintext client of a listener that requires
// TLS is told that it may be missing TLS, whether the listener closes or
// answers with a TLS record; a peer that is merely of another protocol is
// not.
func TestSetupPlaintextToTLS(t *testing.T) {
	serverCfg, _ := testcert.Configs(t)
	c, s := tcpPair(t)
	done := make(chan struct{})
	go func() { // a listener closes a connection whose set-up failed
		defer close(done)
		if sc, _, err := (Setup{Proto: preface.TCP, TLS: serverCfg, Timeout: waitLong}).Server(t.Context(), s, "client"); err != nil && sc != nil {
			sc.Close()
		}
	}()
	_, _, err := Setup{Proto: preface.TCP, Timeout: waitLong}.Client(t.Context(), c, "server")
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.Contains(t, err.Error(), "the listener may require TLS")
	<-done

	for _, got := range [][]byte{{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x32, 0x00}, []byte("HTTP/1.1")} {
		c, s := tcpPair(t)
		go func() {
			s.Write(got)
			io.Copy(io.Discard, s)
		}()
		_, _, err := Setup{Proto: preface.TCP, Timeout: waitLong}.Client(t.Context(), c, "server")
		require.ErrorIs(t, err, transport.ErrProtocol)
		assert.Equal(t, got[0] == 0x15, strings.Contains(err.Error(), "may require TLS"), "%v", err)
		s.Close()
	}
}
