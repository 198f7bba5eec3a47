package prefacetest

import (
	"context"
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
	assert.Less(t, time.Since(start), time.Second, "Dial outlived its context")

	start = time.Now()
	_, err = s.Dial(t, context.Background(), addr, Config{HandshakeTimeout: 200 * time.Millisecond})
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, s.Proto.Name+": "+addr+" sent no preface within 200ms")
	assert.Less(t, time.Since(start), time.Second, "Dial outlived the handshake timeout")

	_, clientCfg := testcert.Configs(t)
	start = time.Now()
	_, err = s.Dial(t, context.Background(), addr, Config{TLS: clientCfg, HandshakeTimeout: 200 * time.Millisecond})
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "the TLS handshake outlived the handshake timeout")
}

// DialForeignPeer: a peer that speaks something else is named as such,
// with what it sent.
func DialForeignPeer(t *testing.T, s Suite) {
	addr := RawListener(t, func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\n"))
		UntilClosed(c)
	})
	_, err := s.Dial(t, t.Context(), addr, Config{})
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, s.Proto.Name+": "+addr+` is not a zerodial peer (it sent "HTTP/1.1")`)
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
