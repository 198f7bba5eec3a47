package mux

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
)

// backSetup is one session between a dialling end, which serves streams
// opened back through incoming, and a listening end, whose Back opens them.
type backSetup struct {
	l            transport.Listener
	back         transport.Transport
	remote       string                    // the dialling end, as l's handlers name it
	incoming     func() transport.Listener // the dialling end's Incoming
	dial         func() transport.Socket   // a stream from the dialling end, closed when the test ends
	closeDialler func()                    // closes the dialling end: its session ends
	clientLive   func() bool               // whether the dialling end's session is open
}

// backSetups runs fn over a Transport's session to a Transport's listener,
// and over a ClientConn's session to NewServerConn's listener.
func backSetups(t *testing.T, fn func(t *testing.T, s backSetup), opts ...Option) {
	t.Run("listen", func(t *testing.T) {
		srv := newTransport(t, opts...)
		l := listen(t, srv)
		tr := newTransport(t, opts...)
		addr := l.Addr().String()
		fn(t, newBackSetup(t, l, func() transport.Socket { return dial(t, tr, addr) }, backSetup{
			incoming:     tr.Incoming,
			closeDialler: func() { tr.Close() },
			clientLive:   func() bool { return tr.sessions() > 0 },
		}))
	})
	t.Run("conn", func(t *testing.T) {
		cc, l := connPair(t, opts...)
		fn(t, newBackSetup(t, l, func() transport.Socket { return dialConn(t, cc) }, backSetup{
			incoming:     cc.Incoming,
			closeDialler: func() { cc.Close() },
			clientLive:   func() bool { return !cc.cs.sess.IsClosed() },
		}))
	})
}

// newBackSetup completes s: it learns the dialling end's address from a
// stream it opens, as a handler would, and closes that stream again.
func newBackSetup(t *testing.T, l transport.Listener, dial func() transport.Socket, s backSetup) backSetup {
	t.Helper()
	s.l, s.dial = l, dial
	back, err := Back(l)
	require.NoError(t, err)
	s.back = back
	c := dial()
	a := acceptSock(t, l)
	s.remote = a.RemoteAddr().String()
	require.NotEmpty(t, s.remote)
	a.Close()
	c.Close()
	return s
}

// dialBack opens a stream with s.back within waitLong, closed when the
// test ends.
func (s backSetup) dialBack(t *testing.T) transport.Socket {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	defer cancel()
	c, err := s.back.Dial(ctx, s.remote)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBackReachesIncoming: a stream Back opens reaches the dialling end's
// Incoming and carries messages both ways, beside the dialling end's own
// streams, which still reach the listener.
func TestBackReachesIncoming(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) {
		in := s.incoming()
		assert.Same(t, in, s.incoming(), "one Listener per end")
		b := s.dialBack(t)
		a := acceptSock(t, in)
		exchangeBoth(t, b, a, "called back")

		// A second one, and the dialling end's own streams, at once.
		b2 := s.dialBack(t)
		a2 := acceptSock(t, in)
		c := s.dial()
		ac := acceptSock(t, s.l)
		exchangeBoth(t, c, ac, "forward")
		exchangeBoth(t, b2, a2, "second")
		exchangeBoth(t, b, a, "first again")
	})
}

// TestBackUnknownAddress: Back's Dial to an address with no session is
// refused, and says so.
func TestBackUnknownAddress(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) {
		_, err := s.back.Dial(t.Context(), "192.0.2.1:9")
		require.ErrorIs(t, err, transport.ErrConnectionRefused)
		assert.Contains(t, err.Error(), "no session from 192.0.2.1:9")
	})
}

// TestBackAfterSessionEnds: once the dialling end's session is gone, Back's
// Dial to it fails, as session closed or, once the listener has forgotten
// the session, as refused.
func TestBackAfterSessionEnds(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) {
		s.incoming()
		s.closeDialler()
		require.Eventually(t, func() bool {
			c, err := s.back.Dial(t.Context(), s.remote)
			if err == nil {
				c.Close() // the listener had not noticed yet
				return false
			}
			return assert.True(t, errors.Is(err, ErrSessionClosed) || errors.Is(err, transport.ErrConnectionRefused), "%v", err)
		}, waitLong, 5*time.Millisecond)
	})
}

// backFails asserts that a stream opened back to an end that serves
// nothing fails: its Recv returns an error (the end of the stream) rather
// than waiting for an answer that never comes.
func backFails(t *testing.T, s backSetup) {
	t.Helper()
	b := s.dialBack(t)
	_ = b.Send(&transport.Message{Body: []byte("anyone?")}) // may fail already
	recvd := make(chan error, 1)
	go func() { recvd <- b.Recv(&transport.Message{}) }()
	err := await(t, recvd, waitLong, "Recv on a stream nobody serves")
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrSessionClosed, "the stream, not the session, ends")
	// The session is unharmed: the dialling end's own streams still work.
	c := s.dial()
	exchangeBoth(t, c, acceptSock(t, s.l), "still up")
}

// TestBackWithoutIncoming: a dialling end that never called Incoming
// closes streams opened back at once.
func TestBackWithoutIncoming(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) { backFails(t, s) })
}

// TestIncomingClose: after Incoming's Close, Accept fails and streams
// opened back are closed at once; streams it accepted before stay open.
func TestIncomingClose(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) {
		in := s.incoming()
		b := s.dialBack(t)
		a := acceptSock(t, in)
		require.NoError(t, in.Close())
		_, err := in.Accept()
		require.ErrorIs(t, err, transport.ErrClosed)
		assert.True(t, in.(transport.ClosedReporter).Closed())
		backFails(t, s)
		exchangeBoth(t, b, a, "accepted before")
	})
}

// TestBackListenerClose: a closed listener's session lives while a stream
// Back opened does, and ends when the last is closed.
func TestBackListenerClose(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) {
		in := s.incoming()
		b := s.dialBack(t)
		a := acceptSock(t, in)
		require.NoError(t, s.l.Close())

		exchangeBoth(t, b, a, "after close")
		// A call in flight may still call back on it.
		b2 := s.dialBack(t)
		a2 := acceptSock(t, in)
		exchangeBoth(t, b2, a2, "opened after close")
		b2.Close()
		a2.Close()
		assert.True(t, s.clientLive(), "closed with a stream open")

		b.Close()
		a.Close()
		require.Eventually(t, func() bool { return !s.clientLive() }, waitLong, 5*time.Millisecond,
			"the session outlived its last stream")
		_, err := s.back.Dial(t.Context(), s.remote)
		require.Error(t, err)
	})
}

// TestBackStreamLimit: with a stream limit, the streams each end opens are
// bounded apart: neither end's streams take the room of the other's, and
// Back's Dial past the limit waits for one of its streams to close.
func TestBackStreamLimit(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) {
		in := s.incoming()
		// The dialling end's one stream, at the limit on both ends.
		c := s.dial()
		ac := acceptSock(t, s.l)

		b := s.dialBack(t)
		a := acceptSock(t, in)
		exchangeBoth(t, b, a, "beside a full limit")
		exchangeBoth(t, c, ac, "forward")

		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := s.back.Dial(ctx, s.remote)
		require.ErrorIs(t, err, context.DeadlineExceeded, "a second stream back, past the limit")

		b.Close()
		a.Close()
		b2 := s.dialBack(t)
		exchangeBoth(t, b2, acceptSock(t, in), "room again")
	}, WithStreamLimit(1))
}

// TestIncomingTransportClose: the Transport's Close closes Incoming's
// Listener, and Incoming after Close returns a closed one.
func TestIncomingTransportClose(t *testing.T) {
	tr := New()
	in := tr.Incoming()
	assert.Equal(t, "mux", in.Addr().Network())
	assert.Equal(t, "incoming", in.Addr().String())
	_, wired := in.(transport.WireReporter)
	assert.False(t, wired, "Incoming reports no Wire")

	accepted := make(chan error, 1)
	go func() {
		_, err := in.Accept()
		accepted <- err
	}()
	require.NoError(t, tr.Close())
	require.ErrorIs(t, await(t, accepted, waitLong, "Accept"), transport.ErrClosed)

	tr2 := New()
	require.NoError(t, tr2.Close())
	_, err := tr2.Incoming().Accept()
	require.ErrorIs(t, err, transport.ErrClosed)
}

// TestBackTransport: what Back's Transport is, and what Back refuses.
func TestBackTransport(t *testing.T) {
	l := listen(t, newTransport(t))
	back, err := Back(l)
	require.NoError(t, err)
	assert.Equal(t, "mux", back.String())
	_, wired := back.(transport.WireReporter)
	assert.False(t, wired, "Back's Transport reports no Wire")
	_, err = back.Listen("127.0.0.1:0")
	require.Error(t, err)

	ml, err := memory.New().Listen("")
	require.NoError(t, err)
	defer ml.Close()
	_, err = Back(ml)
	require.ErrorContains(t, err, "not a Listener of package mux")
}

// TestBackTransportClose: the Close of Back's Transport (it had none)
// closes the streams it opened, whose Send and Recv fail with
// transport.ErrClosed and whose peers see the stream end, and fails its
// later Dials with transport.ErrClosed; the session is the listener's,
// and carries the dialling end's streams on.
func TestBackTransportClose(t *testing.T) {
	backSetups(t, func(t *testing.T, s backSetup) {
		in := s.incoming()
		b := s.dialBack(t)
		a := acceptSock(t, in)
		exchangeBoth(t, b, a, "called back")
		peerErr := make(chan error, 1)
		go func() { peerErr <- a.Recv(&transport.Message{}) }()

		require.NoError(t, s.back.Close())
		assert.ErrorIs(t, b.Recv(&transport.Message{}), transport.ErrClosed)
		assert.ErrorIs(t, b.Send(&transport.Message{Body: []byte("x")}), transport.ErrClosed)
		assert.Error(t, await(t, peerErr, 20*time.Second, "the peer's Recv after Back's Close"))
		_, err := s.back.Dial(t.Context(), s.remote)
		assert.ErrorIs(t, err, transport.ErrClosed)
		assert.NoError(t, s.back.Close(), "Close again")

		c := s.dial()
		exchangeBoth(t, c, acceptSock(t, s.l), "the session serves on")
	})
}

// TestRetiredSessionKeepsBackStreams: a dialler's session retired (its
// listener closed and turned a new stream away) stays open while a stream
// opened back on it is, since closing it would end that stream, and closes
// with it.
func TestRetiredSessionKeepsBackStreams(t *testing.T) {
	srv := newTransport(t)
	l := listen(t, srv)
	tr := newTransport(t)
	addr := l.Addr().String()
	s := newBackSetup(t, l, func() transport.Socket { return dial(t, tr, addr) }, backSetup{})
	in := tr.Incoming()
	b := s.dialBack(t)
	a := acceptSock(t, in)
	require.NoError(t, l.Close())

	// The go-away retires the session at the next Dial, which finds
	// nobody listening.
	require.Eventually(t, func() bool {
		c, err := tr.Dial(t.Context(), addr)
		if err == nil {
			c.Close() // the go-away had not arrived yet
			return false
		}
		return assert.ErrorIs(t, err, transport.ErrConnectionRefused)
	}, waitLong, 10*time.Millisecond)
	require.Equal(t, 1, tr.sessions(), "the retired session lives while the stream opened back does")
	exchangeBoth(t, b, a, "still open")

	a.Close()
	b.Close()
	require.Eventually(t, func() bool { return tr.sessions() == 0 }, waitLong, 5*time.Millisecond)
}
