package mux

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serveEcho accepts on l and sends every message back on the socket it came
// from, until the test ends; it closes l and every socket it accepted then.
func serveEcho(t testing.TB, l transport.Listener) { transporttest.ServeEcho(t, l) }

// listen returns a listener of tr on a free loopback port, closed when the
// test ends.
func listen(t testing.TB, tr *Transport) transport.Listener {
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// waitLong bounds a wait for what must happen: generous, since the
// machine may be loaded; only a failing test waits that long.
const waitLong = 20 * time.Second

// newTransport returns a Transport closed when the test ends.
func newTransport(t testing.TB, opts ...Option) *Transport {
	tr := New(opts...)
	t.Cleanup(func() { tr.Close() })
	return tr
}

// dial dials addr within waitLong; the socket is closed when the test
// ends.
func dial(t testing.TB, tr *Transport, addr string) transport.Socket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	s, err := tr.Dial(ctx, addr)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func roundTrip(t testing.TB, s transport.Socket, body string) {
	t.Helper()
	require.NoError(t, s.Send(&transport.Message{Body: []byte(body)}))
	var m transport.Message
	require.NoError(t, s.Recv(&m))
	require.Equal(t, body, string(m.Body))
}

// await fails the test unless ch yields within d, and returns what it
// yielded.
func await[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
		panic("unreachable")
	}
}

// dialer counts the connections a Transport opens and keeps them, so a test
// can break them underneath the sessions.
type dialer struct {
	mu    sync.Mutex
	conns []*testConn
	delay time.Duration
	// hold, when not nil, holds each attempt until it is closed: a
	// pending attempt that no loaded machine lets finish early.
	hold chan struct{}
	// writesAllowed, when positive, is how many writes each connection
	// takes before every later write fails.
	writesAllowed int32
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.delay > 0 {
		select {
		case <-time.After(d.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d.hold != nil {
		select {
		case <-d.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &testConn{Conn: c, stalled: make(chan struct{}), closed: make(chan struct{}), writesAllowed: d.writesAllowed}
	d.mu.Lock()
	d.conns = append(d.conns, tc)
	d.mu.Unlock()
	return tc, nil
}

func (d *dialer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

func (d *dialer) last() *testConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[len(d.conns)-1]
}

// testConn is a connection a test can stall (a peer that stops answering),
// whose writes it can make fail, or which it can close underneath its user.
type testConn struct {
	net.Conn
	stallOnce, closeOnce sync.Once
	stalled, closed      chan struct{}
	broken               atomic.Bool  // every write fails
	writesAllowed        int32        // when positive, writes after this many fail
	writes               atomic.Int32 // writes so far
}

// errBrokenWrite is the error of a write to a broken testConn.
var errBrokenWrite = errors.New("test: write to a broken connection")

// breakWrites makes every write from now on fail, as when the network
// fails under a connection.
func (c *testConn) breakWrites() { c.broken.Store(true) }

// stall makes the connection swallow everything from now on: reads and
// writes block until Close, as with a peer that froze.
func (c *testConn) stall() { c.stallOnce.Do(func() { close(c.stalled) }) }

func (c *testConn) isStalled() bool {
	select {
	case <-c.stalled:
		return true
	default:
		return false
	}
}

func (c *testConn) Read(b []byte) (int, error) {
	if !c.isStalled() {
		n, err := c.Conn.Read(b)
		if !c.isStalled() {
			return n, err
		}
	}
	<-c.closed
	return 0, net.ErrClosed
}

func (c *testConn) Write(b []byte) (int, error) {
	if n := c.writes.Add(1); c.broken.Load() || (c.writesAllowed > 0 && n > c.writesAllowed) {
		return 0, errBrokenWrite
	}
	if c.isStalled() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

func (c *testConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// sessions reports how many sessions tr holds.
func (t *Transport) sessions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.all)
}

// sessionFor returns the session new streams to addr go on.
func (t *Transport) sessionFor(addr string) *clientSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current[addr]
}
