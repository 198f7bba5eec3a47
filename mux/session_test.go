package mux

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// TestManyStreamsOneSession: 1,000 streams open at once, each with its own
// round trips, all ride one TCP connection and one session.
func TestManyStreamsOneSession(t *testing.T) {
	d := &dialer{}
	srv := newTransport(t)
	tr := newTransport(t, WithDialer(d.dial))
	l := listen(t, srv)
	serveEcho(t, l)

	const streams = 1000
	socks := make([]transport.Socket, streams)
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := tr.Dial(ctx, l.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			socks[i] = s
			var m transport.Message
			for j := range 3 {
				want := fmt.Sprintf("stream %d message %d", i, j)
				if err := s.Send(&transport.Message{Body: []byte(want)}); err != nil {
					errs <- err
					return
				}
				if err := s.Recv(&m); err != nil {
					errs <- err
					return
				}
				if string(m.Body) != want {
					errs <- fmt.Errorf("stream %d got %q, want %q", i, m.Body, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, 1, d.count(), "TCP connections dialled")
	assert.Equal(t, 1, tr.sessions(), "client sessions")
	ll := l.(*listener)
	ll.mu.Lock()
	assert.Len(t, ll.sessions, 1, "server sessions")
	ll.mu.Unlock()
	for _, s := range socks {
		if s != nil {
			s.Close()
		}
	}
}

// TestConcurrentDialsOneSession: Dials racing to an address nobody has
// dialled yet share one connection attempt, and one of them giving up on
// its own context neither fails nor delays the others.
//
// The attempt is held until the test lets it go, rather than for 300 ms:
// a loaded machine could start the callers, or the impatient one, after
// that, and they found the attempt over.
func TestConcurrentDialsOneSession(t *testing.T) {
	d := &dialer{hold: make(chan struct{})} // the attempt stays pending
	srv := newTransport(t)
	tr := newTransport(t, WithDialer(d.dial))
	l := listen(t, srv)
	serveEcho(t, l)
	addr := l.Addr().String()

	const callers = 32
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			s, err := tr.Dial(ctx, addr)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			if err := s.Send(&transport.Message{Body: []byte("hi")}); err != nil {
				errs <- err
				return
			}
			var m transport.Message
			if err := s.Recv(&m); err != nil {
				errs <- err
			}
		})
	}
	close(start)
	require.Eventually(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		cs := tr.current[addr]
		return cs != nil && cs.waiters == callers
	}, waitLong, time.Millisecond, "the callers do not share one attempt")

	// One impatient caller joins and leaves while the attempt is pending:
	// it returns when its context ends, where otherwise it would wait for
	// the attempt, held until it has returned.
	impatient := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := tr.Dial(ctx, addr)
		impatient <- err
	}()
	assert.ErrorIs(t, await(t, impatient, waitLong, "the impatient Dial, its context over"), context.DeadlineExceeded)
	close(d.hold)

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, 1, d.count(), "connections dialled")
	assert.Equal(t, 1, tr.sessions())
}

// TestAbandonedConnectIsCancelled: when every caller waiting for a
// connection leaves, the attempt stops and the next Dial starts afresh.
func TestAbandonedConnectIsCancelled(t *testing.T) {
	d := &dialer{delay: time.Hour}
	tr := newTransport(t, WithDialer(d.dial))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := tr.Dial(ctx, "127.0.0.1:1")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The attempt's goroutine ends, or Close (and the leak check) would
	// hang on it.
	require.Eventually(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.current) == 0
	}, waitLong, 5*time.Millisecond)
}

// TestDialWaitsForBacklog: with the peer's accept backlog full, Dial waits
// for room, and returns when its context ends.
func TestDialWaitsForBacklog(t *testing.T) {
	tr := newTransport(t, WithAcceptBacklog(2))
	l := listen(t, tr) // never accepts
	addr := l.Addr().String()
	var opened []transport.Socket
	defer func() {
		for _, s := range opened {
			s.Close()
		}
	}()
	// The streams the listener queued and those yamux holds fill up:
	// queue (2) + one waiting to be queued + yamux's backlog (2). The
	// first two have room for certain, and are given all the time a loaded
	// machine may take; a 50 ms Dial that gave up on a slow machine rather
	// than for want of room would fail the test.
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		s, err := tr.Dial(ctx, addr)
		cancel()
		require.NoError(t, err, "a Dial with room in the backlog")
		opened = append(opened, s)
	}
	for i := 0; ; i++ {
		require.Less(t, i, 20, "Dial never waited for the backlog")
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		s, err := tr.Dial(ctx, addr)
		cancel()
		// Nothing makes room: a Dial that did not return at its context's
		// end would wait for ever, so a bound far past the 50 ms tells.
		require.Less(t, time.Since(start), waitLong/2, "Dial %d outlived its context", i)
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			break
		}
		opened = append(opened, s)
	}
}

// TestStreamLimit: past the limit, Dial waits for a stream of the session
// to close.
func TestStreamLimit(t *testing.T) {
	srv := newTransport(t)
	tr := newTransport(t, WithStreamLimit(2))
	l := listen(t, srv)
	serveEcho(t, l)
	addr := l.Addr().String()
	a := dial(t, tr, addr)
	dial(t, tr, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := tr.Dial(ctx, addr)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a third stream past a limit of 2")

	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		s, err := tr.Dial(ctx, addr)
		if err == nil {
			s.Close()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("Dial past the limit returned %v before a stream closed", err)
	default:
	}
	a.Close()
	require.NoError(t, await(t, got, waitLong, "Dial after a stream closed"))
}

// TestTransportClose: Close ends every dialled session; their streams fail
// with an error matching transport.ErrClosed, as a tcp socket's does after
// tcp's Transport.Close, and ErrSessionClosed (before, ErrSessionClosed
// alone), and Dial fails with ErrClosed.
func TestTransportClose(t *testing.T) {
	srv := newTransport(t)
	l := listen(t, srv)
	serveEcho(t, l)
	tr := New()
	s := dial(t, tr, l.Addr().String())
	roundTrip(t, s, "before")

	recvErr := make(chan error, 1)
	go func() { recvErr <- s.Recv(&transport.Message{}) }()
	time.Sleep(20 * time.Millisecond) // Recv likely waiting; one begun after Close fails alike
	require.NoError(t, tr.Close())
	err := await(t, recvErr, waitLong, "Recv after Transport.Close")
	assert.ErrorIs(t, err, transport.ErrClosed)
	assert.ErrorIs(t, err, ErrSessionClosed)
	assert.ErrorContains(t, err, "mux: session closed: its Transport was closed")
	assert.ErrorIs(t, s.Send(&transport.Message{Body: []byte("after")}), transport.ErrClosed)

	_, err = tr.Dial(t.Context(), l.Addr().String())
	assert.ErrorIs(t, err, transport.ErrClosed)
	assert.NoError(t, tr.Close(), "Close twice")
}

// TestInvalidConfig: settings yamux or this package would refuse make Dial
// and Listen fail with an error naming the option and its value, not a
// panic or a hang.
func TestInvalidConfig(t *testing.T) {
	for want, opt := range map[string]Option{
		"mux: WithStreamWindow(1000): must be between 262144 (yamux's minimum) and 4294967295": WithStreamWindow(1000),
		"mux: WithWriteTimeout(0s): must be positive":                                          WithWriteTimeout(0),
		"mux: WithAcceptBacklog(0): must be positive":                                          WithAcceptBacklog(0),
		"mux: WithKeepAlive(-1s): must not be negative":                                        WithKeepAlive(-time.Second),
		"mux: WithStreamLimit(-1): must not be negative":                                       WithStreamLimit(-1),
		"mux: WithStreamOpenTimeout(-1s): must not be negative":                                WithStreamOpenTimeout(-time.Second),
		"mux: WithStreamCloseTimeout(-1ns): must not be negative":                              WithStreamCloseTimeout(-1),
		"mux: WithMaxFrameSize(0): must be between 1 and 4294967295":                           WithMaxFrameSize(0),
	} {
		t.Run(want, func(t *testing.T) {
			tr := newTransport(t, opt)
			_, err := tr.Dial(t.Context(), "127.0.0.1:1")
			assert.EqualError(t, err, want)
			_, err = tr.Listen("127.0.0.1:0")
			assert.EqualError(t, err, want)
		})
	}
	// Valid settings, keepalive off included, pass.
	tr := newTransport(t, WithKeepAlive(0), WithStreamWindow(1<<20), WithStreamCloseTimeout(0))
	l := listen(t, tr)
	serveEcho(t, l)
	roundTrip(t, dial(t, tr, l.Addr().String()), "ok")
}

// TestInvalidOptionsAllNamed: Dial and Listen name every invalid option at
// once, this package's and the shared ones alike, in the order given.
func TestInvalidOptionsAllNamed(t *testing.T) {
	tr := newTransport(t, WithKeepAlive(-5*time.Second), WithMaxFrameSize(0), WithStreamWindow(1), WithStreamLimit(3))
	want := "mux: WithKeepAlive(-5s): must not be negative\n" +
		"mux: WithMaxFrameSize(0): must be between 1 and 4294967295\n" +
		"mux: WithStreamWindow(1): must be between 262144 (yamux's minimum) and 4294967295"
	_, err := tr.Dial(t.Context(), "127.0.0.1:1")
	assert.EqualError(t, err, want)
	_, err = tr.Listen("127.0.0.1:0")
	assert.EqualError(t, err, want)
}

// TestOptions: the shared settings and this package's own are both taken
// from the one list New is given, and nil options are skipped.
func TestOptions(t *testing.T) {
	tr := New(WithStreamLimit(3), nil, WithMaxFrameSize(123))
	defer tr.Close()
	assert.Equal(t, 3, tr.cfg.streamLimit)
	assert.Equal(t, 123, tr.MaxFrameSize())
	assert.NoError(t, tr.err)
	assert.Equal(t, DefaultStreamLimit, newTransport(t).cfg.streamLimit, "a stream limit by default")
	assert.Zero(t, newTransport(t, WithStreamLimit(0)).cfg.streamLimit, "which WithStreamLimit(0) removes")
}
