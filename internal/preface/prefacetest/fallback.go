package prefacetest

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/internal/testcert"
)

// The bodies of the tests of a listener with a fallback (WIRE.md, "One
// port"), which tcp and mux run alike.

// newFallback returns a fallback listener closed when the test ends, and a
// channel of what its Accept returns, closed once Accept fails.
func newFallback(t *testing.T) (*fallback.Listener, <-chan net.Conn) {
	fb, err := fallback.New()
	require.NoError(t, err)
	got := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(got)
		for {
			c, err := fb.Accept()
			if err != nil {
				return
			}
			got <- c
		}
	}()
	t.Cleanup(func() {
		fb.Close()
		<-done
		for c := range got {
			c.Close()
		}
	})
	return fb, got
}

// handedOn waits for the fallback's next connection.
func handedOn(t *testing.T, got <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c, ok := <-got:
		require.True(t, ok, "the fallback's Accept failed")
		return c
	case <-time.After(waitLong):
		t.Fatal("no connection reached the fallback")
		return nil
	}
}

// readToEnd reads c until the peer closes it, which must be soon, and
// returns what it read.
func readToEnd(t *testing.T, c net.Conn, what string) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitLong))
	b, err := io.ReadAll(c)
	if err != nil {
		AssertClosedByPeer(t, err, what)
	}
	return b
}

// FallbackServesBoth: a listener with a fallback serves a zerodial client
// as before, and hands a foreign one to the fallback, which reads exactly
// what the client sent; the client receives nothing of zerodial, only what
// the fallback's server writes.
func FallbackServesBoth(t *testing.T, s Suite) {
	fb, got := newFallback(t)
	l := s.Listen(t, Config{Fallback: fb})
	accepted := make(chan transport.Socket, 1)
	go func() {
		if sock, err := l.Accept(); err == nil {
			accepted <- sock
		}
		close(accepted)
	}()

	raw, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer raw.Close()
	const request = "GET /x HTTP/1.0\r\nHost: a\r\n\r\n"
	_, err = raw.Write([]byte(request))
	require.NoError(t, err)

	c, err := s.Dial(t, t.Context(), l.Addr().String(), Config{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Send(&transport.Message{Body: []byte("good")}))
	a, ok := <-accepted
	require.True(t, ok, "Accept failed")
	defer a.Close()
	var m transport.Message
	require.NoError(t, a.Recv(&m))
	assert.Equal(t, "good", string(m.Body))

	fc := handedOn(t, got)
	defer fc.Close()
	assert.Equal(t, fallback.HTTP, fallback.KindOf(fc))
	buf := make([]byte, len(request))
	_, err = io.ReadFull(fc, buf)
	require.NoError(t, err)
	assert.Equal(t, request, string(buf))
	const answer = "HTTP/1.0 204 No Content\r\n\r\n"
	_, err = fc.Write([]byte(answer))
	require.NoError(t, err)
	fc.Close()
	raw.SetReadDeadline(time.Now().Add(waitLong))
	all, err := io.ReadAll(raw)
	require.NoError(t, err)
	assert.Equal(t, answer, string(all), "the client got more than the fallback's server wrote")
}

// FallbackRefusesZerodialMismatch: a zerodial client of the other protocol
// is answered with the listener's preface and closed, as without a
// fallback, and never handed on.
func FallbackRefusesZerodialMismatch(t *testing.T, s Suite) {
	fb, got := newFallback(t)
	l := s.Listen(t, Config{Fallback: fb})
	raw, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Write([]byte(s.Other.Preface))
	require.NoError(t, err)
	b := readToEnd(t, raw, "the other protocol's client")
	assert.Equal(t, s.Proto.Preface, string(b))
	fb.Close()
	for c := range got {
		c.Close()
		t.Error("a zerodial client of the other protocol reached the fallback")
	}
}

// FallbackDropsSilent: a client that sends nothing, or part of a method,
// within the handshake timeout is closed without a byte and logged at
// Debug; none reaches the fallback.
func FallbackDropsSilent(t *testing.T, s Suite) {
	fb, got := newFallback(t)
	logs := &LogBuffer{}
	l := s.Listen(t, Config{
		Fallback:         fb,
		HandshakeTimeout: 200 * time.Millisecond,
		Logger:           slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	for _, send := range []string{"", "PO", "ZDI"} {
		raw, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		defer raw.Close()
		_, err = raw.Write([]byte(send))
		require.NoError(t, err)
		assert.Empty(t, readToEnd(t, raw, "a silent client"), "%q was sent bytes", send)
	}
	require.NoError(t, l.Close())
	fb.Close()
	for c := range got {
		c.Close()
		t.Error("a silent client reached the fallback")
	}
	out := logs.String()
	assert.Contains(t, out, "level=DEBUG")
	assert.NotContains(t, out, "level=WARN")
	assert.Contains(t, out, "the connection's kind was not known before it stopped sending")
	assert.Contains(t, out, "sent no preface within 200ms")
}

// FallbackCloseEndsSniff: the listener's Close ends the reading of a
// foreign client's first bytes at once, closing its connection, and does
// not close the fallback, which still has what was handed to it.
func FallbackCloseEndsSniff(t *testing.T, s Suite) {
	fb, got := newFallback(t)
	l := s.Listen(t, Config{Fallback: fb})
	handed, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer handed.Close()
	_, err = handed.Write([]byte("{}"))
	require.NoError(t, err)
	fc := handedOn(t, got)
	defer fc.Close()

	stalled, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer stalled.Close()
	_, err = stalled.Write([]byte("PO"))
	require.NoError(t, err)
	// Its first bytes are likely being read by now; a connection the
	// listener had not yet taken is reset by its Close, which passes too.
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, l.Close())
	b := readToEnd(t, stalled, "a connection being read")
	assert.Empty(t, b)

	// The fallback and its connection live on.
	_, err = fc.Write([]byte("still here"))
	require.NoError(t, err)
	buf := make([]byte, len("still here"))
	_, err = io.ReadFull(handed, buf)
	require.NoError(t, err)
	assert.Equal(t, "still here", string(buf))
	a, b2 := net.Pipe()
	defer a.Close()
	go a.Write([]byte("{}"))
	require.NoError(t, fb.Offer(b2), "the listener's Close closed the fallback")
	handedOn(t, got).Close()
}

// FallbackTLS: over TLS the first bytes are read inside TLS, and the
// fallback gets the *tls.Conn, terminated, with them replayed; a plaintext
// client of the TLS listener fails the TLS handshake and is not handed on.
func FallbackTLS(t *testing.T, s Suite) {
	fb, got := newFallback(t)
	serverCfg, clientCfg := testcert.Configs(t)
	l := s.Listen(t, Config{Fallback: fb, TLS: serverCfg})

	c, err := tls.Dial("tcp", l.Addr().String(), clientCfg)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte(`{"id":1}`))
	require.NoError(t, err)
	fc := handedOn(t, got)
	defer fc.Close()
	assert.Equal(t, fallback.JSON, fallback.KindOf(fc))
	inner, ok := fc.(interface{ NetConn() net.Conn })
	require.True(t, ok)
	assert.IsType(t, &tls.Conn{}, inner.NetConn())
	buf := make([]byte, len(`{"id":1}`))
	_, err = io.ReadFull(fc, buf)
	require.NoError(t, err)
	assert.Equal(t, `{"id":1}`, string(buf))

	raw, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	require.NoError(t, err)
	readToEnd(t, raw, "a plaintext client of a TLS listener")
	require.NoError(t, l.Close())
	fb.Close()
	for c := range got {
		c.Close()
		t.Error("a plaintext client of a TLS listener reached the fallback")
	}
}
