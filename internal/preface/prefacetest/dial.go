package prefacetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/testcert"
)

// DialOtherListener: a client dialling a listener of the other transport
// fails at Dial, naming what the listener speaks, instead of failing at
// the first call; over TLS too, since the preface travels inside it.
func DialOtherListener(t *testing.T, s Suite) {
	l := s.OtherListen(t, Config{})
	_, err := s.Dial(t, t.Context(), l.Addr().String(), Config{})
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, s.speaks(l.Addr().String(), s.Other.Name+"/1"))

	serverCfg, clientCfg := testcert.Configs(t)
	l = s.OtherListen(t, Config{TLS: serverCfg})
	_, err = s.Dial(t, t.Context(), l.Addr().String(), Config{TLS: clientCfg})
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.Contains(t, err.Error(), "speaks zerodial "+s.Other.Name+"/1, not "+s.Proto.Name+"/1")
}

// DialSilentPeer: a peer that accepts and never writes holds Dial no
// longer than ctx, and, with a ctx that never ends, no longer than the
// handshake timeout; over TLS a silent peer holds the handshake, which the
// timeout bounds too.
func DialSilentPeer(t *testing.T, s Suite) {
	addr := RawListener(t, UntilClosed)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Dial(t, ctx, addr, Config{})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), belowHandshake, "Dial outlived its context")

	start = time.Now()
	_, err = s.Dial(t, context.Background(), addr, Config{HandshakeTimeout: 200 * time.Millisecond})
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, s.Proto.Name+": "+addr+" sent no preface within 200ms (an HTTP/1 server stays silent so, waiting for a request: if "+
		addr+" serves HTTP, "+overHTTP+")")
	assert.Less(t, time.Since(start), belowHandshake, "Dial outlived the handshake timeout")

	_, clientCfg := testcert.Configs(t)
	start = time.Now()
	_, err = s.Dial(t, context.Background(), addr, Config{TLS: clientCfg, HandshakeTimeout: 200 * time.Millisecond})
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, time.Since(start), belowHandshake, "the TLS handshake outlived the handshake timeout")
}

// overHTTP is what a Dial's error tells to do with a peer that speaks
// HTTP (preface.OverHTTP, which this package, imported by preface's tests,
// cannot import).
const overHTTP = "call it over HTTP — an httpzerodial client, or the zerodial command with its http:// URL"

// DialForeignPeer: a peer that answers something else fails Dial at once,
// quoting what it sent — and naming HTTP, with the way to call it, when it
// is an HTTP/1 status line (a server, or proxy, answering the preface as a
// bad request) or an HTTP/2 server's SETTINGS frame, which it sends
// unasked.
func DialForeignPeer(t *testing.T, s Suite) {
	for _, tc := range []struct{ sent, quoted, want string }{
		{"HTTP/1.1 400 Bad Request\r\n", `"HTTP/1.1"`, "speaks HTTP/1, not zerodial (it sent %s): " + overHTTP},
		// SETTINGS, 3 settings (18 bytes), on stream 0.
		{"\x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64", `"\x00\x00\x12\x04\x00\x00\x00\x00"`, "speaks HTTP/2, not zerodial (it sent %s): " + overHTTP},
		{"-ERR unknown command\r\n", `"-ERR unk"`, "is not a zerodial peer (it sent %s)"},
	} {
		addr := RawListener(t, func(c net.Conn) {
			c.Write([]byte(tc.sent))
			UntilClosed(c)
		})
		start := time.Now()
		_, err := s.Dial(t, t.Context(), addr, Config{})
		require.ErrorIs(t, err, transport.ErrProtocol)
		assert.EqualError(t, err, s.Proto.Name+": "+addr+" "+fmt.Sprintf(tc.want, tc.quoted))
		assert.Less(t, time.Since(start), belowHandshake, "Dial waited for the handshake timeout")
	}
}

// DialVersionMismatch: a zerodial peer of another version, of this
// protocol or the other, is named with the version it speaks.
func DialVersionMismatch(t *testing.T, s Suite) {
	for _, p := range []Protocol{s.Proto, s.Other} {
		addr := RawListener(t, func(c net.Conn) {
			c.Write([]byte(p.version2()))
			UntilClosed(c)
		})
		_, err := s.Dial(t, t.Context(), addr, Config{})
		require.ErrorIs(t, err, transport.ErrProtocol)
		assert.EqualError(t, err, s.speaks(addr, p.Name+"/2"))
	}
}

// DialPeerClosesFirst: a peer that closes the connection without a word
// fails Dial, saying so.
func DialPeerClosesFirst(t *testing.T, s Suite) {
	addr := RawListener(t, func(net.Conn) {})
	_, err := s.Dial(t, t.Context(), addr, Config{})
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.Contains(t, err.Error(), s.Proto.Name+": "+addr+" closed the connection before its preface")
}
