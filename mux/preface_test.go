package mux

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/tcp"
)

// muxPreface is the connection preface of the mux transport (WIRE.md).
const muxPreface = "ZDIALm\x01\x00"

// setHandshakeTimeout shortens the handshake timeout of the Transports New
// makes until the test ends.
func setHandshakeTimeout(t *testing.T, d time.Duration) {
	old := handshakeTimeout
	handshakeTimeout = d
	t.Cleanup(func() { handshakeTimeout = old })
}

// rawListener accepts plain TCP connections and hands each to serve, on a
// goroutine; connections and listener are closed when the test ends.
func rawListener(t *testing.T, serve func(net.Conn)) string {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		nl.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := nl.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	return nl.Addr().String()
}

func untilClosed(c net.Conn) { io.Copy(io.Discard, c) }

// TestDialTCPListener: a mux client dialling a tcp listener fails at Dial,
// naming what the listener speaks.
func TestDialTCPListener(t *testing.T) {
	l, err := tcp.New().Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	tr := newTransport(t)
	_, err = tr.Dial(t.Context(), l.Addr().String())
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "mux: "+l.Addr().String()+" speaks zerodial tcp/1, not mux/1")
	assert.Zero(t, tr.sessions(), "a failed session is not kept")
}

// TestDialSilentPeer: a peer that accepts and never writes holds Dial no
// longer than ctx, where before the preface Dial succeeded and the failure
// came much later; with a ctx that never ends, no longer than the
// handshake timeout.
func TestDialSilentPeer(t *testing.T) {
	addr := rawListener(t, untilClosed)
	tr := newTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tr.Dial(ctx, addr)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "Dial outlived its context")

	setHandshakeTimeout(t, 200*time.Millisecond)
	tr = newTransport(t)
	start = time.Now()
	_, err = tr.Dial(context.Background(), addr)
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "mux: "+addr+" sent no preface within 200ms")
	assert.Less(t, time.Since(start), time.Second, "Dial outlived the handshake timeout")

	_, clientCfg := selfSigned(t)
	tr = newTransport(t, transport.WithTLS(clientCfg))
	start = time.Now()
	_, err = tr.Dial(context.Background(), addr)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "the TLS handshake outlived the handshake timeout")
}

func TestDialForeignPeer(t *testing.T) {
	addr := rawListener(t, func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\n"))
		untilClosed(c)
	})
	_, err := newTransport(t).Dial(t.Context(), addr)
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "mux: "+addr+` is not a zerodial peer (it sent "HTTP/1.1")`)
}

func TestDialVersionMismatch(t *testing.T) {
	addr := rawListener(t, func(c net.Conn) {
		c.Write([]byte("ZDIALt\x02\x00"))
		untilClosed(c)
	})
	_, err := newTransport(t).Dial(t.Context(), addr)
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "mux: "+addr+" speaks zerodial tcp/2, not mux/1")

	addr = rawListener(t, func(c net.Conn) {
		c.Write([]byte("ZDIALm\x02\x00"))
		untilClosed(c)
	})
	_, err = newTransport(t).Dial(t.Context(), addr)
	assert.EqualError(t, err, "mux: "+addr+" speaks zerodial mux/2, not mux/1")
}

func TestDialPeerClosesFirst(t *testing.T) {
	addr := rawListener(t, func(net.Conn) {})
	_, err := newTransport(t).Dial(t.Context(), addr)
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.Contains(t, err.Error(), "mux: "+addr+" closed the connection before its preface")
}

// TestListenerDropsBadClients: a client that sends garbage, the tcp
// preface, another version, or nothing within the timeout gets no session:
// the listener closes its connection, and a good client is served
// meanwhile.
func TestListenerDropsBadClients(t *testing.T) {
	setHandshakeTimeout(t, time.Second)
	logs := &logBuffer{}
	srv := newTransport(t, transport.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	l := listen(t, srv)
	serveEcho(t, l)

	sends := map[string]string{
		"garbage": "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"tcp":     "ZDIALt\x01\x00",
		"version": "ZDIALm\x02\x00",
		"silent":  "",
	}
	closed := make(chan string, len(sends))
	for name, send := range sends {
		c, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		if send != "" {
			_, err = c.Write([]byte(send))
			require.NoError(t, err)
		}
		go func() {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, err := io.ReadAll(c)
			if err == nil || errors.Is(err, syscall.ECONNRESET) {
				assert.Equal(t, muxPreface, string(b), name)
				closed <- name
			} else {
				closed <- name + ": not closed by the listener: " + err.Error()
			}
		}()
	}

	start := time.Now()
	roundTrip(t, dial(t, newTransport(t), l.Addr().String()), "good")
	assert.Less(t, time.Since(start), 500*time.Millisecond, "a silent client held up the listener")

	for range sends {
		select {
		case name := <-closed:
			assert.Contains(t, sends, name)
		case <-time.After(5 * time.Second):
			t.Fatal("a bad client's connection stayed open")
		}
	}
	ll := l.(*listener)
	ll.mu.Lock()
	assert.Len(t, ll.sessions, 1, "server sessions: the good client's only")
	ll.mu.Unlock()
	out := logs.String()
	assert.Contains(t, out, "speaks zerodial tcp/1, not mux/1")
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "sent no preface within 1s")
	assert.Contains(t, out, "is not a zerodial peer")
}

// TestListenerCloseEndsPreface: Close ends the preface exchanges under way.
func TestListenerCloseEndsPreface(t *testing.T) {
	l, err := New().Listen("127.0.0.1:0")
	require.NoError(t, err)
	silent, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer silent.Close()
	buf := make([]byte, len(muxPreface))
	_, err = io.ReadFull(silent, buf)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	silent.SetReadDeadline(time.Now().Add(time.Second))
	_, err = silent.Read(buf)
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "the connection being set up is still open: %v", err)
}

func TestWire(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	assert.Equal(t, transport.Wire{Protocol: "mux/1"}, New().Wire())
	assert.Equal(t, transport.Wire{Protocol: "mux/1", TLS: true}, New(transport.WithTLS(clientCfg)).Wire())
	withCert := clientCfg.Clone()
	withCert.Certificates = serverCfg.Certificates
	assert.Equal(t, transport.Wire{Protocol: "mux/1", TLS: true, ClientCert: true}, New(transport.WithTLS(withCert)).Wire())

	for cfg, want := range map[*tls.Config]transport.Wire{
		nil:                                    {Protocol: "mux/1"},
		serverCfg:                              {Protocol: "mux/1", TLS: true},
		{ClientAuth: tls.RequireAnyClientCert}: {Protocol: "mux/1", TLS: true, ClientCert: true},
		{ClientAuth: tls.VerifyClientCertIfGiven}: {Protocol: "mux/1", TLS: true},
	} {
		var opts []transport.Option
		if cfg != nil {
			opts = append(opts, transport.WithTLS(cfg))
		}
		l := listen(t, newTransport(t, opts...))
		assert.Equal(t, want, l.(transport.WireReporter).Wire())
	}
}
