package tcp_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/internal/preface/prefacetest"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// newSocketAsync runs NewSocket on c on a goroutine, for the end whose peer
// is set up on the test's own goroutine; the socket is closed when the test
// ends.
func newSocketAsync(t *testing.T, c net.Conn, opts ...tcp.Option) <-chan transport.Socket {
	ch := make(chan transport.Socket, 1)
	go func() {
		s, err := tcp.NewSocket(context.Background(), c, opts...)
		if !assert.NoError(t, err) {
			close(ch)
			return
		}
		t.Cleanup(func() { s.Close() })
		ch <- s
	}()
	return ch
}

// exchangeOne sends one message each way between a and b, each Send on a
// goroutine, since over net.Pipe a Send waits for the peer's Recv.
func exchangeOne(t *testing.T, a, b transport.Socket) {
	t.Helper()
	for _, dir := range []struct {
		from, to transport.Socket
		body     string
	}{{a, b, "a to b"}, {b, a, "b to a"}} {
		sent := make(chan error, 1)
		go func() { sent <- dir.from.Send(&transport.Message{Body: []byte(dir.body)}) }()
		var m transport.Message
		require.NoError(t, dir.to.Recv(&m))
		assert.Equal(t, dir.body, string(m.Body))
		require.NoError(t, <-sent)
	}
}

// TestNewSocketPipe: NewSocket on both ends of net.Pipe, whose writes wait
// for the peer's read, sets both up; each honours its frame limit.
func TestNewSocketPipe(t *testing.T) {
	a, b := net.Pipe()
	bs := newSocketAsync(t, b, tcp.WithMaxFrameSize(64))
	as, err := tcp.NewSocket(t.Context(), a)
	require.NoError(t, err)
	defer as.Close()
	bSock := <-bs
	require.NotNil(t, bSock)
	exchangeOne(t, as, bSock)
	assert.ErrorIs(t, bSock.Send(&transport.Message{Body: make([]byte, 65)}), transport.ErrFrameTooLarge)
	assert.Equal(t, "pipe", as.RemoteAddr().String())
}

// TestNewSocketToListener: the client end of a connection dialled by hand
// speaks to a tcp listener.
func TestNewSocketToListener(t *testing.T) {
	l, err := tcp.New().Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := acceptOne(t, l)
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	s, err := tcp.NewSocket(t.Context(), c)
	require.NoError(t, err)
	defer s.Close()
	exchangeOne(t, s, <-accepted)
}

// TestDialToNewSocket: tcp.Dial speaks to NewSocket on a connection
// accepted by hand, and so does a TLS Dial when the caller wraps the
// connection in TLS.
func TestDialToNewSocket(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	for name, tc := range map[string]struct {
		wrap func(net.Conn) net.Conn
		opts []tcp.Option
	}{
		"plain": {func(c net.Conn) net.Conn { return c }, nil},
		"tls":   {func(c net.Conn) net.Conn { return tls.Server(c, serverCfg) }, []tcp.Option{tcp.WithTLS(clientCfg)}},
	} {
		t.Run(name, func(t *testing.T) {
			server := make(chan transport.Socket, 1)
			addr := prefacetest.RawListener(t, func(c net.Conn) {
				server <- <-newSocketAsync(t, tc.wrap(c))
				<-t.Context().Done() // RawListener closes c when this returns
			})
			c, err := tcp.New(tc.opts...).Dial(t.Context(), addr)
			require.NoError(t, err)
			defer c.Close()
			s := <-server
			require.NotNil(t, s)
			exchangeOne(t, c, s)
		})
	}
}

// TestNewSocketMuxListener: a mux listener on the other end fails NewSocket
// as it fails Dial, naming what it speaks; conn is closed, and the logger
// hears of it as of a misconfigured peer.
func TestNewSocketMuxListener(t *testing.T) {
	srv := mux.New()
	defer srv.Close()
	l, err := srv.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	logs := &prefacetest.LogBuffer{}
	_, err = tcp.NewSocket(t.Context(), c, tcp.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "tcp: "+l.Addr().String()+" speaks zerodial mux/1, not tcp/1")
	_, err = c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, net.ErrClosed, "NewSocket left conn open")
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "speaks zerodial mux/1, not tcp/1")
}

// TestNewSocketSilentPeer: a peer that never answers holds NewSocket no
// longer than ctx, and, with a ctx that never ends, no longer than the
// handshake timeout; conn is closed either way. It runs in a synctest
// bubble, over net.Pipe, so that each bound is checked to the instant: on
// the real clock a loaded machine could take the second allowed past
// either.
func TestNewSocketSilentPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := tcp.NewSocket(ctx, a)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "NewSocket returned other than when its context ended")
		_, err = a.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.ErrClosedPipe, "NewSocket left conn open")

		a, b = net.Pipe()
		defer b.Close()
		start = time.Now()
		_, err = tcp.NewSocket(context.Background(), a, tcp.WithHandshakeTimeout(200*time.Millisecond))
		assert.ErrorIs(t, err, transport.ErrProtocol)
		assert.ErrorContains(t, err, "tcp: pipe sent no preface within 200ms (an HTTP/1 server stays silent")
		assert.Equal(t, 200*time.Millisecond, time.Since(start), "NewSocket returned other than at the handshake timeout")
	})
}

// TestNewSocketRefusesTLSOption: WithTLS would promise a TLS connection
// NewSocket does not make; it fails, and closes conn, instead.
func TestNewSocketRefusesTLSOption(t *testing.T) {
	_, clientCfg := selfSigned(t)
	a, b := net.Pipe()
	defer b.Close()
	_, err := tcp.NewSocket(t.Context(), a, tcp.WithTLS(clientCfg))
	assert.ErrorContains(t, err, "tcp: NewSocket with pipe: WithTLS is not for NewSocket")
	_, err = a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewSocket left conn open")
}

// TestNewSocketRefusesFallbackOption: WithFallback is for the listeners
// Listen makes; NewSocket, whose connection is the caller's to route,
// fails with it rather than ignore it, and closes conn.
func TestNewSocketRefusesFallbackOption(t *testing.T) {
	fb, err := fallback.New()
	require.NoError(t, err)
	defer fb.Close()
	a, b := net.Pipe()
	defer b.Close()
	_, err = tcp.NewSocket(t.Context(), a, tcp.WithFallback(fb))
	assert.EqualError(t, err, "tcp: NewSocket with pipe: WithFallback is not for NewSocket: it applies to the listeners Listen makes")
	_, err = a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewSocket left conn open")
}

// TestNewSocketInvalidOptions: NewSocket names every option it refuses,
// WithTLS among them, before any exchange, and closes conn.
func TestNewSocketInvalidOptions(t *testing.T) {
	_, clientCfg := selfSigned(t)
	a, b := net.Pipe()
	defer b.Close()
	_, err := tcp.NewSocket(t.Context(), a, tcp.WithMaxFrameSize(0), tcp.WithTLS(clientCfg))
	assert.EqualError(t, err, "tcp: WithMaxFrameSize(0): must be between 1 and 4294967295\n"+
		"tcp: NewSocket with pipe: WithTLS is not for NewSocket: wrap the connection with tls.Client or tls.Server")
	_, err = a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewSocket left conn open")
}

// TestFrameTimeout: a peer that sends part of a message and stops is
// dropped once WithFrameTimeout has passed since the message's first byte;
// zero turns the bound off. (Dial and Listen make their sockets as
// NewSocket does; internal/frame tests the bound itself.)
func TestFrameTimeout(t *testing.T) {
	halfFrame := []byte{1, 0, 0, 0, 0, 4, 0, 0}
	for _, tc := range []struct {
		name string
		opts []tcp.Option
		want time.Duration // 0: never
	}{
		{"100ms", []tcp.Option{tcp.WithFrameTimeout(100 * time.Millisecond)}, 100 * time.Millisecond},
		{"off", []tcp.Option{tcp.WithFrameTimeout(0)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer b.Close()
			peer := make(chan error, 1)
			go func() { _, err := tcp.NewSocket(context.Background(), b); peer <- err }()
			sock, err := tcp.NewSocket(context.Background(), a, tc.opts...)
			require.NoError(t, err)
			defer sock.Close()
			require.NoError(t, <-peer)

			errc := make(chan error, 1)
			start := time.Now()
			go func() { var m transport.Message; errc <- sock.Recv(&m) }()
			_, err = b.Write(halfFrame)
			require.NoError(t, err)
			if tc.want == 0 {
				select {
				case err := <-errc:
					t.Fatalf("Recv returned %v with the frame timeout off", err)
				case <-time.After(300 * time.Millisecond):
				}
				sock.Close()
				<-errc
				return
			}
			select {
			case err := <-errc:
				assert.GreaterOrEqual(t, time.Since(start), tc.want)
				assert.ErrorIs(t, err, transport.ErrTimeout)
				assert.Contains(t, err.Error(), "frame timeout")
			case <-time.After(5 * time.Second):
				t.Fatal("a half-sent frame held Recv for 5s")
			}
		})
	}
}
