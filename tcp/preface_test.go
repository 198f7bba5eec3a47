package tcp_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

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

// untilClosed reads from c until the peer closes it.
func untilClosed(c net.Conn) { io.Copy(io.Discard, c) }

// TestDialMuxListener: a tcp client dialling a mux listener fails at Dial,
// naming what the listener speaks, instead of failing at the first call.
func TestDialMuxListener(t *testing.T) {
	srv := mux.New()
	defer srv.Close()
	l, err := srv.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()

	_, err = tcp.New().Dial(t.Context(), l.Addr().String())
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "tcp: "+l.Addr().String()+" speaks zerodial mux/1, not tcp/1")
}

// TestDialMuxListenerTLS: the preface travels inside TLS, and still names
// the mismatch.
func TestDialMuxListenerTLS(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	srv := mux.New(transport.WithTLS(serverCfg))
	defer srv.Close()
	l, err := srv.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()

	_, err = tcp.New(transport.WithTLS(clientCfg)).Dial(t.Context(), l.Addr().String())
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.Contains(t, err.Error(), "speaks zerodial mux/1, not tcp/1")
}

// TestDialSilentPeer: a peer that accepts and never writes holds Dial no
// longer than ctx, and, with a ctx that never ends, no longer than the
// handshake timeout.
func TestDialSilentPeer(t *testing.T) {
	addr := rawListener(t, untilClosed)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tcp.New().Dial(ctx, addr)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "Dial outlived its context")

	tcp.SetHandshakeTimeout(t, 200*time.Millisecond)
	start = time.Now()
	_, err = tcp.New().Dial(context.Background(), addr)
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "tcp: "+addr+" sent no preface within 200ms")
	assert.Less(t, time.Since(start), time.Second, "Dial outlived the handshake timeout")

	// Over TLS a silent peer holds the handshake, which the timeout bounds
	// too.
	_, clientCfg := selfSigned(t)
	start = time.Now()
	_, err = tcp.New(transport.WithTLS(clientCfg)).Dial(context.Background(), addr)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "the TLS handshake outlived the handshake timeout")
}

// TestDialForeignPeer: a peer that speaks something else is named as such,
// with what it sent.
func TestDialForeignPeer(t *testing.T) {
	addr := rawListener(t, func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\n"))
		untilClosed(c)
	})
	_, err := tcp.New().Dial(t.Context(), addr)
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "tcp: "+addr+` is not a zerodial peer (it sent "HTTP/1.1")`)
}

func TestDialVersionMismatch(t *testing.T) {
	addr := rawListener(t, func(c net.Conn) {
		c.Write([]byte("ZDIALt\x02\x00"))
		untilClosed(c)
	})
	_, err := tcp.New().Dial(t.Context(), addr)
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "tcp: "+addr+" speaks zerodial tcp/2, not tcp/1")
}

func TestDialPeerClosesFirst(t *testing.T) {
	addr := rawListener(t, func(net.Conn) {})
	_, err := tcp.New().Dial(t.Context(), addr)
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.Contains(t, err.Error(), "tcp: "+addr+" closed the connection before its preface")
}

// TestListenerDropsBadClients: clients that send garbage, another
// protocol's preface, another version, or nothing within the timeout are
// closed by the listener and never reach Accept; a good client dialling
// meanwhile is accepted at once.
func TestListenerDropsBadClients(t *testing.T) {
	tcp.SetHandshakeTimeout(t, time.Second)
	logs := &logBuffer{}
	tr := tcp.New(transport.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan transport.Socket, 10)
	go func() {
		for {
			s, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- s
		}
	}()

	sends := map[string]string{
		"garbage": "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"mux":     "ZDIALm\x01\x00",
		"version": "ZDIALt\x02\x00",
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
			// The listener's preface, then the end of the connection.
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, err := io.ReadAll(c)
			if err == nil || errors.Is(err, syscall.ECONNRESET) {
				assert.Equal(t, tcpPreface, string(b), name)
				closed <- name
			} else {
				closed <- name + ": not closed by the listener: " + err.Error()
			}
		}()
	}

	// While the silent client is being waited for, a good one gets in.
	start := time.Now()
	c, err := tr.Dial(t.Context(), l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Send(&transport.Message{Body: []byte("good")}))
	s := <-accepted
	defer s.Close()
	var m transport.Message
	require.NoError(t, s.Recv(&m))
	assert.Equal(t, "good", string(m.Body))
	assert.Less(t, time.Since(start), 500*time.Millisecond, "a silent client held up Accept")

	for range sends {
		select {
		case name := <-closed:
			assert.Contains(t, sends, name)
		case <-time.After(5 * time.Second):
			t.Fatal("a bad client's connection stayed open")
		}
	}
	select {
	case s := <-accepted:
		s.Close()
		t.Fatal("a bad client reached Accept")
	default:
	}
	out := logs.String()
	assert.Contains(t, out, "speaks zerodial mux/1, not tcp/1")
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "sent no preface within 1s")
	assert.Contains(t, out, "is not a zerodial peer")
}

// TestListenerCloseClosesPending: Close closes the connections still being
// set up and those set up but not yet accepted, and ends its goroutines
// (TestMain checks that none leaks).
func TestListenerCloseClosesPending(t *testing.T) {
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)

	silent, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer silent.Close()
	c, err := tr.Dial(t.Context(), l.Addr().String()) // set up, never accepted
	require.NoError(t, err)
	defer c.Close()
	buf := make([]byte, len(tcpPreface))
	_, err = io.ReadFull(silent, buf) // its set-up has begun
	require.NoError(t, err)

	require.NoError(t, l.Close())
	silent.SetReadDeadline(time.Now().Add(time.Second))
	_, err = silent.Read(buf)
	assertClosedByPeer(t, err, "the connection being set up")
	// c's Dial may have returned before the listener read c's preface;
	// closed with it unread, c sees a reset rather than EOF.
	c.SetDeadline(time.Now().Add(time.Second))
	assertClosedByPeer(t, c.Recv(&transport.Message{}), "the connection awaiting Accept")
	_, err = l.Accept()
	assert.ErrorIs(t, err, transport.ErrClosed)
}

// TestAcceptBacklog: a listener nobody accepts from holds a bounded number
// of connections; past it, Dial waits (here, until its ctx ends), and
// Accept makes room again.
func TestAcceptBacklog(t *testing.T) {
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	n := 0
	for ; n < 1000; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		c, err := tr.Dial(ctx, l.Addr().String())
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			break
		}
		defer c.Close()
	}
	require.Less(t, n, 1000, "the backlog is not bounded")
	t.Logf("%d connections held before Dial waits", n)

	// The Dial that gave up is still in the kernel's backlog, and takes
	// the first slot Accept frees (its preface is there to read): make two.
	for range 2 {
		s, err := l.Accept()
		require.NoError(t, err)
		s.Close()
	}
	c, err := tr.Dial(t.Context(), l.Addr().String())
	require.NoError(t, err, "Accept made no room")
	c.Close()
}

func TestWire(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	assert.Equal(t, transport.Wire{Protocol: "tcp/1"}, tcp.New().Wire())
	assert.Equal(t, transport.Wire{Protocol: "tcp/1", TLS: true}, tcp.New(transport.WithTLS(clientCfg)).Wire())
	withCert := clientCfg.Clone()
	withCert.Certificates = serverCfg.Certificates
	assert.Equal(t, transport.Wire{Protocol: "tcp/1", TLS: true, ClientCert: true}, tcp.New(transport.WithTLS(withCert)).Wire())

	for cfg, want := range map[*tls.Config]transport.Wire{
		nil:       {Protocol: "tcp/1"},
		serverCfg: {Protocol: "tcp/1", TLS: true},
		{ClientAuth: tls.RequireAndVerifyClientCert}: {Protocol: "tcp/1", TLS: true, ClientCert: true},
		{ClientAuth: tls.VerifyClientCertIfGiven}:    {Protocol: "tcp/1", TLS: true},
	} {
		var opts []transport.Option
		if cfg != nil {
			opts = append(opts, transport.WithTLS(cfg))
		}
		l, err := tcp.New(opts...).Listen("127.0.0.1:0")
		require.NoError(t, err)
		assert.Equal(t, want, l.(transport.WireReporter).Wire())
		l.Close()
	}
	assert.True(t, tcp.New().Wire().Accepts(tcp.New().Wire()))
	assert.False(t, mux.New().Wire().Accepts(tcp.New().Wire()), "mux/1 and tcp/1 differ")
}

// assertClosedByPeer checks that err, from a read, says the peer closed the
// connection: EOF, or a reset when it closed with bytes unread.
func assertClosedByPeer(t *testing.T, err error, what string) {
	t.Helper()
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "%s is still open: %v", what, err)
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
