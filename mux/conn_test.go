package mux

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/internal/conntest"
	"github.com/zerodial/transport/internal/preface/prefacetest"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// newServerConnAsync runs NewServerConn on c on a goroutine, for the end
// whose peer is set up on the test's own goroutine; the listener is closed
// when the test ends.
func newServerConnAsync(t *testing.T, c net.Conn, opts ...Option) <-chan transport.Listener {
	ch := make(chan transport.Listener, 1)
	go func() {
		l, err := NewServerConn(context.Background(), c, opts...)
		if !assert.NoError(t, err) {
			close(ch)
			return
		}
		t.Cleanup(func() { l.Close() })
		ch <- l
	}()
	return ch
}

// connPair returns both ends of one session over net.Pipe, closed when the
// test ends.
func connPair(t *testing.T, opts ...Option) (*ClientConn, transport.Listener) {
	t.Helper()
	a, b := net.Pipe()
	ls := newServerConnAsync(t, b, opts...)
	cc, err := NewClientConn(t.Context(), a, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	l := await(t, ls, waitLong, "NewServerConn")
	require.NotNil(t, l)
	return cc, l
}

// dialConn opens a stream on cc, closed when the test ends.
func dialConn(t *testing.T, cc *ClientConn) transport.Socket {
	t.Helper()
	s, err := cc.Dial(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// acceptSock accepts one stream from l within a second, closed when the
// test ends.
func acceptSock(t *testing.T, l transport.Listener) transport.Socket {
	t.Helper()
	s := await(t, acceptOne(l), waitLong, "Accept")
	t.Cleanup(func() { s.Close() })
	return s
}

// exchangeBoth sends one message each way between a and b.
func exchangeBoth(t *testing.T, a, b transport.Socket, body string) {
	t.Helper()
	for _, d := range []struct{ from, to transport.Socket }{{a, b}, {b, a}} {
		require.NoError(t, d.from.Send(&transport.Message{Body: []byte(body)}))
		var m transport.Message
		require.NoError(t, d.to.Recv(&m))
		assert.Equal(t, body, string(m.Body))
	}
}

// assertSessionGone checks that err, from Send or Recv on a stream whose
// session ended, says so as a Transport's stream would.
func assertSessionGone(t *testing.T, err error, what string) {
	t.Helper()
	assert.True(t, errors.Is(err, ErrSessionClosed) || errors.Is(err, io.EOF), "%s: %v", what, err)
}

// TestConnPipe: NewClientConn and NewServerConn on the two ends of
// net.Pipe make one session; three Dials are three streams, accepted in
// turn, each carrying messages both ways.
func TestConnPipe(t *testing.T) {
	a, b := net.Pipe()
	ls := newServerConnAsync(t, b, WithMaxFrameSize(64))
	cc, err := NewClientConn(t.Context(), a)
	require.NoError(t, err)
	defer cc.Close()
	l := await(t, ls, waitLong, "NewServerConn")
	require.NotNil(t, l)

	assert.Equal(t, b.LocalAddr(), l.Addr())
	assert.Equal(t, "pipe", cc.RemoteAddr().String())
	assert.Equal(t, 64, l.(transport.FrameLimiter).MaxFrameSize())
	_, isWire := l.(transport.WireReporter)
	assert.False(t, isWire, "a listener of one connection cannot know its TLS settings")

	var clients, servers []transport.Socket
	for range 3 {
		clients = append(clients, dialConn(t, cc))
	}
	for range 3 {
		servers = append(servers, acceptSock(t, l))
	}
	for i := range 3 {
		exchangeBoth(t, clients[i], servers[i], "stream "+string(rune('a'+i)))
	}
	assert.Equal(t, "pipe", clients[0].RemoteAddr().String())
	assert.ErrorIs(t, servers[0].Send(&transport.Message{Body: make([]byte, 65)}), transport.ErrFrameTooLarge)

	// Closing one stream leaves the others and the session alone.
	clients[0].Close()
	assertSessionGone(t, servers[0].Recv(&transport.Message{}), "closed stream")
	exchangeBoth(t, clients[1], servers[1], "still")
	exchangeBoth(t, dialConn(t, cc), acceptSock(t, l), "fourth")
}

// TestConnTLS: the caller's TLS connections carry a session, the handshake
// completed by the preface exchange.
func TestConnTLS(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	a, b := net.Pipe()
	clientCfg = clientCfg.Clone()
	clientCfg.ServerName = "127.0.0.1"
	ls := newServerConnAsync(t, tls.Server(b, serverCfg))
	cc, err := NewClientConn(t.Context(), tls.Client(a, clientCfg))
	require.NoError(t, err)
	defer cc.Close()
	l := await(t, ls, waitLong, "NewServerConn")
	require.NotNil(t, l)
	exchangeBoth(t, dialConn(t, cc), acceptSock(t, l), "over tls")
}

// TestClientConnToListener: a ClientConn over a connection dialled by hand
// speaks to a listener of Transport.Listen.
func TestClientConnToListener(t *testing.T) {
	l := listen(t, newTransport(t))
	serveEcho(t, l)
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	cc, err := NewClientConn(t.Context(), c)
	require.NoError(t, err)
	defer cc.Close()
	for _, body := range []string{"one", "two", "three"} {
		roundTrip(t, dialConn(t, cc), body)
	}
}

// TestDialToServerConn: Transport.Dial speaks to NewServerConn on a
// connection accepted by hand, and its later Dials share the session.
func TestDialToServerConn(t *testing.T) {
	addr := prefacetest.RawListener(t, func(c net.Conn) {
		l := <-newServerConnAsync(t, c)
		if l == nil {
			return
		}
		serveEcho(t, l)
		<-t.Context().Done() // RawListener closes c when this returns
	})
	d := &dialer{}
	tr := newTransport(t, WithDialer(d.dial))
	roundTrip(t, dial(t, tr, addr), "first")
	roundTrip(t, dial(t, tr, addr), "second")
	assert.Equal(t, 1, d.count(), "one connection")
}

// TestConnOtherProtocol: a tcp peer fails NewClientConn and NewServerConn
// with ErrProtocol naming what it speaks, as it fails Dial; conn is
// closed, and the logger hears of it as of a misconfigured peer.
func TestConnOtherProtocol(t *testing.T) {
	tl, err := tcp.New().Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer tl.Close()
	c, err := net.Dial("tcp", tl.Addr().String())
	require.NoError(t, err)
	logs := &prefacetest.LogBuffer{}
	_, err = NewClientConn(t.Context(), c, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "mux: "+tl.Addr().String()+" speaks zerodial tcp/1, not mux/1")
	_, err = c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, net.ErrClosed, "NewClientConn left conn open")
	assert.Contains(t, logs.String(), "level=WARN")

	// A tcp.NewSocket peer over net.Pipe fails NewServerConn alike.
	a, b := net.Pipe()
	go func() {
		if s, err := tcp.NewSocket(context.Background(), a); err == nil {
			s.Close()
		}
	}()
	_, err = NewServerConn(t.Context(), b)
	require.ErrorIs(t, err, transport.ErrProtocol)
	assert.EqualError(t, err, "mux: pipe speaks zerodial tcp/1, not mux/1")
	_, err = b.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewServerConn left conn open")
}

// TestConnSilentPeer: a peer that never answers holds either end no longer
// than ctx, and, with a ctx that never ends, no longer than the handshake
// timeout; conn is closed either way. It runs in a synctest bubble, over
// net.Pipe, so that each end is checked to return at the instant its
// bound ends: on the real clock it was to return within 100 ms of it,
// which a loaded machine need not keep.
func TestConnSilentPeer(t *testing.T) {
	short := WithHandshakeTimeout(200 * time.Millisecond)
	for name, newConn := range map[string]func(context.Context, net.Conn) error{
		"client": func(ctx context.Context, c net.Conn) error { _, err := NewClientConn(ctx, c, short); return err },
		"server": func(ctx context.Context, c net.Conn) error { _, err := NewServerConn(ctx, c, short); return err },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := net.Pipe()
				defer b.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				start := time.Now()
				assert.ErrorIs(t, newConn(ctx, a), context.DeadlineExceeded)
				assert.Equal(t, 50*time.Millisecond, time.Since(start), "returned other than when its context ended")
				_, err := a.Read(make([]byte, 1))
				assert.ErrorIs(t, err, io.ErrClosedPipe, "conn left open")

				a, b = net.Pipe()
				defer b.Close()
				start = time.Now()
				err = newConn(context.Background(), a)
				assert.ErrorIs(t, err, transport.ErrProtocol)
				assert.ErrorContains(t, err, "mux: pipe sent no preface within 200ms")
				assert.Equal(t, 200*time.Millisecond, time.Since(start), "returned other than at the handshake timeout")
				_, err = a.Read(make([]byte, 1))
				assert.ErrorIs(t, err, io.ErrClosedPipe, "conn left open")
			})
		})
	}
}

// TestClientConnClose: closing the client end fails every stream on both
// ends, Dial afterwards, and the server's Accept, which reports the
// session gone.
func TestClientConnClose(t *testing.T) {
	cc, l := connPair(t)
	c1 := dialConn(t, cc)
	s1 := acceptSock(t, l)
	exchangeBoth(t, c1, s1, "before")
	c2 := dialConn(t, cc)
	s2 := acceptSock(t, l)
	recvd := make(chan error, 1)
	go func() { recvd <- s2.Recv(&transport.Message{}) }()

	require.NoError(t, cc.Close())
	err := c1.Recv(&transport.Message{})
	assert.ErrorIs(t, err, ErrSessionClosed)
	assert.ErrorIs(t, err, transport.ErrClosed, "closed on this end")
	err = c2.Send(&transport.Message{Body: []byte("x")})
	assert.ErrorIs(t, err, ErrSessionClosed)
	assert.ErrorIs(t, err, transport.ErrClosed, "closed on this end")
	assertSessionGone(t, await(t, recvd, waitLong, "blocked Recv"), "server stream, blocked")
	assertSessionGone(t, s1.Recv(&transport.Message{}), "server stream")
	_, err = cc.Dial(t.Context())
	assert.ErrorIs(t, err, transport.ErrClosed)
	assert.NoError(t, cc.Close(), "Close twice")

	_, err = l.Accept()
	assert.ErrorIs(t, err, ErrSessionClosed)
	assert.ErrorIs(t, err, transport.ErrClosed, "nothing more to accept: dispatch stops serving")
	assert.False(t, l.(transport.ClosedReporter).Closed())
	require.NoError(t, l.Close())
	_, err = l.Accept()
	assert.Equal(t, transport.ErrClosed, err)
}

// TestServerConnClose: closing the server end with no stream accepted
// closes the streams it queued and ends the session at once: the client's
// streams fail, and so does Dial, with ErrSessionClosed, since there is
// nothing to reconnect to.
func TestServerConnClose(t *testing.T) {
	cc, l := connPair(t)
	c := dialConn(t, cc)
	require.Eventually(t, func() bool { return len(l.(*connListener).l.queue) == 1 }, waitLong, time.Millisecond)
	require.NoError(t, l.Close())
	_, err := l.Accept()
	assert.ErrorIs(t, err, transport.ErrClosed)
	assert.True(t, l.(transport.ClosedReporter).Closed())
	assertSessionGone(t, c.Recv(&transport.Message{}), "client stream")
	require.Eventually(t, func() bool {
		_, err := cc.Dial(t.Context())
		return err != nil && assert.ErrorIs(t, err, ErrSessionClosed)
	}, waitLong, 5*time.Millisecond)
}

// TestServerConnCloseUnblocksAccept: Close makes a pending Accept return
// ErrClosed.
func TestServerConnCloseUnblocksAccept(t *testing.T) {
	_, l := connPair(t)
	pending := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		pending <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, l.Close())
	assert.ErrorIs(t, await(t, pending, waitLong, "pending Accept"), transport.ErrClosed)
}

// TestServerConnCloseKeepsAccepted: as with a Transport's listener, a
// stream already accepted outlives Close; the session takes no new
// streams, and ends with that stream.
func TestServerConnCloseKeepsAccepted(t *testing.T) {
	cc, l := connPair(t)
	c := dialConn(t, cc)
	s := acceptSock(t, l)
	idle := dialConn(t, cc)
	acceptSock(t, l) // and left open
	require.NoError(t, l.Close())
	exchangeBoth(t, c, s, "still here")

	require.Eventually(t, func() bool {
		s, err := cc.Dial(t.Context())
		if err == nil {
			s.Close() // the go-away had not arrived yet
			return false
		}
		return assert.ErrorIs(t, err, ErrSessionClosed)
	}, waitLong, 5*time.Millisecond)

	s.Close()
	assert.ErrorIs(t, c.Recv(&transport.Message{}), io.EOF)
	idle.Close() // the last stream the server accepted is still open
	recvd := make(chan error, 1)
	go func() { recvd <- c.Send(&transport.Message{Body: []byte("late")}) }()
	assert.Error(t, await(t, recvd, waitLong, "Send"))
}

// TestConnRefusesTLSOption: WithTLS would promise a TLS connection neither
// end makes; it fails, with every other invalid option, before the
// exchange, and conn is closed.
func TestConnRefusesTLSOption(t *testing.T) {
	_, clientCfg := selfSigned(t)
	a, b := net.Pipe()
	defer b.Close()
	_, err := NewClientConn(t.Context(), a, WithKeepAlive(-time.Second), WithTLS(clientCfg), WithStreamLimit(-1))
	assert.EqualError(t, err, "mux: WithKeepAlive(-1s): must not be negative\n"+
		"mux: WithStreamLimit(-1): must not be negative\n"+
		"mux: NewClientConn with pipe: WithTLS is not for NewClientConn: wrap the connection with tls.Client or tls.Server")
	_, err = a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewClientConn left conn open")

	a, b = net.Pipe()
	defer b.Close()
	_, err = NewServerConn(t.Context(), a, WithTLS(clientCfg))
	assert.EqualError(t, err, "mux: NewServerConn with pipe: WithTLS is not for NewServerConn: wrap the connection with tls.Client or tls.Server")
	_, err = a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewServerConn left conn open")
}

// TestConnRefusesFallbackOption: WithFallback is for the listeners Listen
// makes; NewClientConn and NewServerConn fail with it rather than ignore
// it, and close conn.
func TestConnRefusesFallbackOption(t *testing.T) {
	fb, err := fallback.New()
	require.NoError(t, err)
	defer fb.Close()
	a, b := net.Pipe()
	defer b.Close()
	_, err = NewClientConn(t.Context(), a, WithFallback(fb))
	assert.EqualError(t, err, "mux: NewClientConn with pipe: WithFallback is not for NewClientConn: it applies to the listeners Listen makes")
	_, err = a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewClientConn left conn open")

	a, b = net.Pipe()
	defer b.Close()
	_, err = NewServerConn(t.Context(), a, WithFallback(fb))
	assert.EqualError(t, err, "mux: NewServerConn with pipe: WithFallback is not for NewServerConn: it applies to the listeners Listen makes")
	_, err = a.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "NewServerConn left conn open")
}

// TestClientConnStreamLimit: WithStreamLimit bounds a ClientConn's open
// streams as it bounds a Transport session's.
func TestClientConnStreamLimit(t *testing.T) {
	cc, l := connPair(t, WithStreamLimit(1))
	s := dialConn(t, cc)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := cc.Dial(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	a := acceptSock(t, l)
	exchangeBoth(t, s, a, "one")
	s.Close()
	a.Close() // the server's limit too
	exchangeBoth(t, dialConn(t, cc), acceptSock(t, l), "two")
}

// ConnArith is the service TestConnDispatch calls.
type ConnArith struct{}

// Sum adds its arguments.
func (ConnArith) Sum(args []int, reply *int) error {
	for _, n := range args {
		*reply += n
	}
	return nil
}

// TestConnDispatch: a dispatch.Server serves a NewServerConn listener, and
// a dispatch.Client over a ClientConn's stream calls it.
func TestConnDispatch(t *testing.T) {
	cc, l := connPair(t)
	srv := dispatch.NewServer()
	require.NoError(t, srv.Register(ConnArith{}))
	require.NoError(t, srv.Start(l))
	defer srv.Close()

	sock, err := cc.Dial(t.Context())
	require.NoError(t, err)
	c, err := dispatch.NewClient(sock)
	require.NoError(t, err)
	defer c.Close()
	var sum int
	require.NoError(t, c.Call(t.Context(), "ConnArith.Sum", []int{1, 2, 39}, &sum))
	assert.Equal(t, 42, sum)
}

// TestConformanceConn holds streams made by NewClientConn and
// NewServerConn — a session on each connection, carrying one stream — to
// the whole Transport contract.
func TestConformanceConn(t *testing.T) {
	client := func(ctx context.Context, c net.Conn) (transport.Socket, error) {
		cc, err := NewClientConn(ctx, c)
		if err != nil {
			return nil, err
		}
		s, err := cc.Dial(ctx)
		if err != nil {
			cc.Close()
			return nil, err
		}
		return &ownedSocket{socket: s.(*socket), owner: cc}, nil
	}
	server := func(ctx context.Context, c net.Conn) (transport.Socket, error) {
		sl, err := NewServerConn(ctx, c)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { sl.Close() }) // the listener's Close ends the wait
		s, err := sl.Accept()
		stop()
		if err != nil {
			sl.Close()
			return nil, err
		}
		return &ownedSocket{socket: s.(*socket), owner: sl}, nil
	}
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		return &conntest.Transport{Name: "mux.NewClientConn", Client: client, Server: server}, "127.0.0.1:0"
	}, transporttest.TransportFrameLimiter|transporttest.AllSocketAbilities&^transporttest.SocketFrameWaiter)
}

// ownedSocket is a stream that closes its session's end with it. It
// embeds the stream's own type, not transport.Socket, so that the
// stream's abilities (SendAsync, Queue, TLS, ...) are its own and the
// suite holds them to their contracts: embedding the interface hid them.
type ownedSocket struct {
	*socket
	owner io.Closer
}

func (s *ownedSocket) Close() error {
	err := s.socket.Close()
	s.owner.Close()
	return err
}
