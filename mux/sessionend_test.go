package mux

import (
	"context"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"weak"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// weakSet holds weak pointers to objects that must be freed, by name.
type weakSet struct {
	mu       sync.Mutex
	streams  []weak.Pointer[yamux.Stream]
	sessions []weak.Pointer[yamux.Session]
}

// add records the stream of s and its session.
func (w *weakSet) add(s transport.Socket) {
	st := s.(*socket).c.st
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streams = append(w.streams, weak.Make(st))
	w.sessions = append(w.sessions, weak.Make(st.Session()))
}

// live reports how many streams and sessions of w are still in memory.
func (w *weakSet) live() (streams, sessions int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.streams {
		if p.Value() != nil {
			streams++
		}
	}
	for _, p := range w.sessions {
		if p.Value() != nil {
			sessions++
		}
	}
	return streams, sessions
}

// awaitFreed collects garbage until every object of each set has been
// freed, and fails the test if some are still in memory after d. The
// goroutines of a closed session end soon after Close returns, not with it,
// hence the wait; d is far shorter than the close timeouts in play.
func awaitFreed(t *testing.T, d time.Duration, sets map[string]*weakSet) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		runtime.GC()
		left := 0
		for _, w := range sets {
			st, ss := w.live()
			left += st + ss
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			for name, w := range sets {
				st, ss := w.live()
				t.Errorf("%s: %d of %d streams and %d of %d sessions still in memory %v after they were closed",
					name, st, len(w.streams), ss, len(w.sessions), d)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClosedSessionFreedAtOnce: sessions dialled, used and closed, each
// with a stream closed just before, are freed at once on both ends, streams
// included, although a stream close timeout of an hour is in force; yamux
// alone keeps each such session until the timer its stream's Close armed
// fires (tracker.endFrames).
func TestClosedSessionFreedAtOnce(t *testing.T) {
	const sessions = 200
	opts := []Option{WithStreamCloseTimeout(time.Hour)}
	srv := New(opts...)
	defer srv.Close()
	l, err := srv.Listen("127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()

	var client, server weakSet
	var served sync.WaitGroup
	served.Go(func() {
		for {
			s, err := l.Accept()
			if err != nil {
				return
			}
			server.add(s)
			served.Go(func() {
				defer s.Close()
				var m transport.Message
				for s.Recv(&m) == nil && s.Send(&m) == nil {
				}
			})
		}
	})

	for range sessions {
		tr := New(opts...)
		ctx, cancel := context.WithTimeout(t.Context(), waitLong)
		s, err := tr.Dial(ctx, addr)
		cancel()
		require.NoError(t, err)
		roundTrip(t, s, "ping")
		client.add(s)
		require.NoError(t, s.Close())
		require.NoError(t, tr.Close())
	}
	awaitFreed(t, waitLong, map[string]*weakSet{"client": &client, "server": &server})
	l.Close()
	served.Wait()
}

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestManyStreamsSessionDies: a session carrying thousands of streams, each
// with a Recv blocked on both ends, dies, because the connection is lost
// or because the Transport is closed. Every Recv fails with
// ErrSessionClosed, without the processor time of a spin: yamux v0.1.2
// alone has every blocked reader loop without blocking while
// Session.Close ends the streams one by one, which at this size takes
// both cores for minutes (tracker.markDead). The listener is past
// its stream limit, with opens left waiting in its accept backlog, which
// must not make it spin either.
func TestManyStreamsSessionDies(t *testing.T) {
	const (
		limit = 2000 // the listener's stream limit, and the streams it accepts
		extra = 200  // streams opened past it, waiting in the backlog
		calls = 2*limit + extra
		// Generous bounds: the work is proportional to the streams, and
		// a spin costs tens of seconds of processor time. The wall bound
		// is a hang guard (a loaded machine stretches the wall time, not
		// this process's processor time): the processor time tells a spin.
		wallBound = waitLong
		cpuBound  = 3 * time.Second
	)
	for _, how := range []string{"connection lost", "transport closed"} {
		t.Run(how, func(t *testing.T) {
			d := &dialer{}
			srv := newTransport(t, WithStreamLimit(limit))
			tr := newTransport(t, WithDialer(d.dial), WithStreamLimit(0))
			l := listen(t, srv)
			addr := l.Addr().String()

			// Each socket is closed only once every Recv has returned: a
			// socket closed earlier would end its stream on the other end
			// cleanly, with io.EOF.
			errs := make(chan error, calls)
			var (
				mu      sync.Mutex
				sockets []transport.Socket
			)
			recv := func(s transport.Socket) {
				mu.Lock()
				sockets = append(sockets, s)
				mu.Unlock()
				errs <- s.Recv(&transport.Message{})
			}
			accepted := make(chan struct{}, limit+extra)
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					s, err := l.Accept()
					if err != nil {
						return
					}
					accepted <- struct{}{}
					wg.Go(func() { recv(s) })
				}
			})
			for range limit + extra {
				ctx, cancel := context.WithTimeout(t.Context(), waitLong)
				s, err := tr.Dial(ctx, addr)
				cancel()
				require.NoError(t, err)
				wg.Go(func() { recv(s) })
			}
			for i := range limit {
				await(t, accepted, waitLong, "Accept of stream "+strconv.Itoa(i))
			}
			time.Sleep(100 * time.Millisecond) // the Recvs block; no more accepts
			require.Empty(t, accepted, "the listener took streams past its limit")
			select {
			case err := <-errs:
				t.Fatalf("a Recv returned before the session died: %v", err)
			default:
			}

			cpu0, start := cpuTime(t), time.Now()
			if how == "connection lost" {
				d.last().Conn.Close() // underneath yamux and the testConn
			} else {
				wg.Go(func() { tr.Close() })
			}
			deadline := time.After(wallBound)
			for i := range calls {
				select {
				case err := <-errs:
					require.ErrorIs(t, err, ErrSessionClosed, "Recv %d", i)
				case <-deadline:
					t.Fatalf("%d of %d blocked Recvs still blocked %v after the session died (%v of processor time)",
						calls-i, calls, wallBound, cpuTime(t)-cpu0)
				}
			}
			elapsed, cpu := time.Since(start), cpuTime(t)-cpu0
			t.Logf("%d Recvs returned in %v, using %v of processor time", calls, elapsed, cpu)
			assert.Less(t, cpu, cpuBound, "processor time while %d Recvs returned", calls)
			for _, s := range sockets {
				s.Close()
			}
			l.Close()
			tr.Close()
			wg.Wait()
		})
	}
}

// TestDialSessionDiesDuringOpen: a session whose connection fails as Dial
// opens a stream on it is retired like one found dead before the open:
// Dial connects afresh and succeeds; and when every connection fails so,
// Dial reports ErrSessionClosed rather than the connection's write error,
// as ClientConn.Dial does.
func TestDialSessionDiesDuringOpen(t *testing.T) {
	t.Run("reconnects", func(t *testing.T) {
		d := &dialer{}
		srv := newTransport(t)
		tr := newTransport(t, WithDialer(d.dial))
		l := listen(t, srv)
		serveEcho(t, l)
		addr := l.Addr().String()
		roundTrip(t, dial(t, tr, addr), "first")
		// yamux reports the failed write to the opener and shuts the
		// session down at nearly the same time; either may come first,
		// so several rounds.
		for i := range 10 {
			d.last().breakWrites()
			s := dial(t, tr, addr)
			require.Equal(t, i+2, d.count(), "round %d: a new connection", i)
			roundTrip(t, s, "after")
		}
	})
	t.Run("fails with ErrSessionClosed", func(t *testing.T) {
		d := &dialer{writesAllowed: 1} // the preface, then nothing
		srv := newTransport(t)
		tr := newTransport(t, WithDialer(d.dial))
		l := listen(t, srv)
		serveEcho(t, l)
		ctx, cancel := context.WithTimeout(t.Context(), waitLong)
		defer cancel()
		_, err := tr.Dial(ctx, l.Addr().String())
		require.ErrorIs(t, err, ErrSessionClosed)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 2, d.count(), "one new connection, not more")
	})
}

// TestDeadSessionDeliversReceived: what a stream received before its
// session died is still read, and only then does Recv report the death.
func TestDeadSessionDeliversReceived(t *testing.T) {
	d := &dialer{}
	srv := newTransport(t)
	tr := newTransport(t, WithDialer(d.dial))
	l := listen(t, srv)
	addr := l.Addr().String()
	c1 := dial(t, tr, addr)
	s1 := await(t, acceptOne(l), waitLong, "Accept")
	defer s1.Close()
	c2 := dial(t, tr, addr)
	s2 := await(t, acceptOne(l), waitLong, "Accept")
	defer s2.Close()

	require.NoError(t, s1.Send(&transport.Message{Body: []byte("sent before")}))
	// The connection carries frames in order: once stream 2's message has
	// arrived, so has stream 1's.
	echoOnce(t, c2, s2, "fence")
	d.last().Conn.Close()

	var m transport.Message
	require.NoError(t, c1.Recv(&m))
	assert.Equal(t, "sent before", string(m.Body))
	assert.ErrorIs(t, c1.Recv(&m), ErrSessionClosed)
}

// TestSessionErrorSaysWhy: a stream of a session that an error of its
// connection ended fails with an error that matches ErrSessionClosed and
// wraps that error; one whose peer hung up says so without claiming, as
// io.EOF would, that the peer closed the stream.
func TestSessionErrorSaysWhy(t *testing.T) {
	t.Run("write failed", func(t *testing.T) {
		d := &dialer{}
		tr := newTransport(t, WithDialer(d.dial))
		l := listen(t, newTransport(t))
		serveEcho(t, l)
		s := dial(t, tr, l.Addr().String())
		roundTrip(t, s, "before")
		d.last().breakWrites()
		var err error
		for range 10 { // the failed write ends the session; a later call reports it
			if err = s.Send(&transport.Message{Body: []byte("x")}); err != nil {
				break
			}
			var m transport.Message
			if err = s.Recv(&m); err != nil {
				break
			}
		}
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrSessionClosed)
		assert.ErrorIs(t, err, errBrokenWrite)
		assert.Contains(t, err.Error(), "mux: session closed: test: write to a broken connection")
	})
	t.Run("peer hung up", func(t *testing.T) {
		a, b := net.Pipe()
		ls := newServerConnAsync(t, b)
		cc, err := NewClientConn(t.Context(), a)
		require.NoError(t, err)
		defer cc.Close()
		l := await(t, ls, waitLong, "NewServerConn")
		s := dialConn(t, cc)
		peer := acceptSock(t, l)
		exchangeBoth(t, s, peer, "hi")
		require.NoError(t, b.Close()) // the peer's end of the connection goes
		var m transport.Message
		err = s.Recv(&m)
		assert.ErrorIs(t, err, ErrSessionClosed)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.NotErrorIs(t, err, io.EOF, "the peer did not close the stream")
		assert.Contains(t, err.Error(), "mux: session closed: the peer closed the connection")
	})
}

// TestFrameTimeout: a peer that sends part of a message on a stream and
// stops fails the listener's Recv once WithFrameTimeout has passed since
// the message's first byte, and only that stream is closed.
func TestFrameTimeout(t *testing.T) {
	l := listen(t, newTransport(t, WithFrameTimeout(100*time.Millisecond)))
	tr := newTransport(t)
	s := dial(t, tr, l.Addr().String())
	peer := await(t, acceptOne(l), waitLong, "Accept")
	defer peer.Close()
	// start is taken before the write: the peer's bound begins at the
	// first byte, which a loaded machine may read before this goroutine
	// runs again, so that a start taken after the write was up to the
	// whole timeout late.
	start := time.Now()
	_, err := s.(*socket).c.Write([]byte{1, 0, 0, 0, 0, 4}) // half a frame prefix
	require.NoError(t, err)
	var m transport.Message
	err = peer.Recv(&m)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "before the frame timeout")
	require.ErrorIs(t, err, transport.ErrTimeout)
	assert.Contains(t, err.Error(), "frame timeout (100ms)")

	other := dial(t, tr, l.Addr().String()) // the session lives on
	otherPeer := await(t, acceptOne(l), waitLong, "Accept")
	defer otherPeer.Close()
	exchangeBoth(t, other, otherPeer, "still here")
}
