package dispatch_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
)

// TestMaxCallsPerConn: a connection with its limit of calls in flight gets
// the next one answered at once with CodeResourceExhausted; once calls finish,
// new ones run again.
func TestMaxCallsPerConn(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	srv := dispatch.NewServer(dispatch.WithMaxCallsPerConn(2))
	require.NoError(t, dispatch.Handle(srv, "Slow.Wait", func(ctx context.Context, args *int, reply *int) error {
		started <- struct{}{}
		<-release
		*reply = *args
		return nil
	}))
	tr := memory.New()
	addr := serve(t, srv, tr, "")
	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	defer c.Close()

	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			var r int
			assert.NoError(t, c.Call(context.Background(), "Slow.Wait", i, &r))
		})
	}
	<-started
	<-started
	var r int
	err = c.Call(context.Background(), "Slow.Wait", 7, &r)
	var de *dispatch.Error
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, dispatch.CodeResourceExhausted, de.Code)
	assert.Contains(t, de.Message, "too many calls in flight")

	close(release)
	wg.Wait()
	require.NoError(t, c.Call(context.Background(), "Slow.Wait", 7, &r))
	assert.Equal(t, 7, r)
}

// acceptErrListener fails its first Accept with an error that is not
// transport.ErrClosed, as a listener out of file descriptors does.
type acceptErrListener struct {
	transport.Listener
	once sync.Once
}

func (l *acceptErrListener) Accept() (transport.Socket, error) {
	var err error
	l.once.Do(func() { err = errors.New("accept: too many open files") })
	if err != nil {
		return nil, err
	}
	return l.Listener.Accept()
}

// TestAcceptErrorIsRetried: an Accept error other than the listener's
// closing does not stop the Server.
func TestAcceptErrorIsRetried(t *testing.T) {
	srv, _, _ := newServer(t)
	tr := memory.New()
	inner, err := tr.Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(&acceptErrListener{Listener: inner}))
	t.Cleanup(func() { srv.Close() })
	c, err := dispatch.Dial(context.Background(), tr, inner.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	var r int
	require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{6, 7}, &r))
	assert.Equal(t, 42, r)
}

// failingListener's Accept fails, as a listener out of file descriptors
// does, until it is closed.
type failingListener struct {
	transport.Listener
	closed chan struct{}
	once   sync.Once
}

func (l *failingListener) Accept() (transport.Socket, error) {
	select {
	case <-l.closed:
		return nil, transport.ErrClosed
	default:
		return nil, errors.New("accept: too many open files")
	}
}

func (l *failingListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// TestShutdownEndsAcceptBackoff: a Server backing off between failed
// Accepts (up to a second) stops at once when shut down. It runs in a
// synctest bubble, no call made: on the bubble's clock "at once" is no
// time at all, where on the real clock it was within 150 ms of a backoff
// past 300 ms, which a loaded machine need not keep.
func TestShutdownEndsAcceptBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, _, _ := newServer(t)
		inner, err := memory.New().Listen("")
		require.NoError(t, err)
		require.NoError(t, srv.Start(&failingListener{Listener: inner, closed: make(chan struct{})}))
		time.Sleep(700 * time.Millisecond) // the backoff has grown past 300 ms
		start := time.Now()
		require.NoError(t, srv.Shutdown(context.Background()))
		assert.Zero(t, time.Since(start), "Shutdown waited out the accept backoff")
	})
}

// sendRequests sends n requests for Gen.Add on sock from a goroutine, and
// never reads a reply; it stops at the first failed Send. The returned
// channel closes when it has stopped.
func sendRequests(sock transport.Socket, n int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		body, _ := codec.Msgpack.Marshal(Args{1, 2})
		for i := range n {
			m := &transport.Message{Header: map[string]string{"Service-Method": "Gen.Add", "Seq": strconv.Itoa(i)}, Body: body}
			if sock.Send(m) != nil {
				return
			}
		}
	}()
	return done
}

// A peer that sends requests and never reads its replies holds no more
// calls (each a goroutine and a reply) than the per-connection limit: a
// call counts until its reply is written. Before, a call stopped counting
// when its handler returned, and 4,000 requests left 3,764 goroutines.
func TestUnreadRepliesAreBounded(t *testing.T) {
	srv2 := dispatch.NewServer(dispatch.WithMaxCallsPerConn(20), dispatch.WithReplyTimeout(time.Minute))
	require.NoError(t, dispatch.Handle(srv2, "Gen.Add", func(ctx context.Context, a *Args, r *int) error { *r = a.A + a.B; return nil }))
	tr := memory.New()
	addr := serve(t, srv2, tr, "")
	before := runtime.NumGoroutine()
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	done := sendRequests(sock, 2000)
	time.Sleep(300 * time.Millisecond) // the server takes what it will
	assert.LessOrEqual(t, runtime.NumGoroutine()-before, 20+10, "goroutines held by one peer that does not read")
	sock.Close()
	recv(t, done, waitLong, "the sender to stop")
}

// A reply that cannot be written within the reply timeout closes the
// connection: the peer that does not read is dropped, and what it held is
// freed.
func TestReplyTimeoutClosesTheConnection(t *testing.T) {
	srv := dispatch.NewServer(dispatch.WithReplyTimeout(100 * time.Millisecond))
	require.NoError(t, dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, a *Args, r *int) error { *r = a.A + a.B; return nil }))
	tr := memory.New()
	addr := serve(t, srv, tr, "")
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	defer sock.Close()
	done := sendRequests(sock, 100000)
	// The server closes the connection, so the sender's Send fails.
	recv(t, done, waitLong, "the server to drop the connection")
	require.NoError(t, sock.SetReadDeadline(time.Now().Add(waitLong)))
	var m transport.Message
	for {
		if err = sock.Recv(&m); err != nil {
			break
		}
	}
	assert.NotErrorIs(t, err, transport.ErrTimeout, "the connection stayed open")
}

// A network connection that stays silent with no call in flight — having
// sent nothing, or half a message — is dropped after the idle timeout, on
// every transport; one with a call in flight, or calling now and then, is
// not.
//
// That a connection calling now and then was kept says something only if
// its quiet spells were shorter than the idle timeout; on a loaded machine
// one may not have been, though the test paused 60 ms. Each spell is
// bounded from above — from the handler's return, before the reply went,
// to the next call's return, after its request arrived — and the check is
// made only when every bound is under the timeout.
func TestIdleConnectionsAreDropped(t *testing.T) {
	const idle = 300 * time.Millisecond
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			srv := dispatch.NewServer(dispatch.WithIdleTimeout(idle))
			var returned atomic.Int64 // when the last handler returned, in Unix nanoseconds
			require.NoError(t, dispatch.Handle(srv, "Slow.Sleep", func(ctx context.Context, ms *int, r *int) error {
				time.Sleep(time.Duration(*ms) * time.Millisecond)
				*r = *ms
				returned.Store(time.Now().UnixNano())
				return nil
			}))
			tr := tc.make(t)
			addr := serve(t, srv, tr, tc.listen)

			// Silent from the start.
			sock, err := tr.Dial(context.Background(), addr)
			require.NoError(t, err)
			require.NoError(t, sock.SetReadDeadline(time.Now().Add(waitLong)))
			var m transport.Message
			err = sock.Recv(&m)
			assert.NotErrorIs(t, err, transport.ErrTimeout, "a silent connection was kept")
			sock.Close()

			// A call longer than the idle timeout, then calls now and then:
			// one connection throughout.
			tt := &trackedTransport{Transport: tr}
			c, err := dispatch.Dial(context.Background(), tt, addr)
			require.NoError(t, err)
			defer c.Close()
			var r int
			require.NoError(t, c.Call(context.Background(), "Slow.Sleep", intPtr(int(idle/time.Millisecond)+200), &r))
			var longest time.Duration // the longest quiet spell could be
			for range 5 {
				last := time.Unix(0, returned.Load())
				time.Sleep(60 * time.Millisecond)
				require.NoError(t, c.Call(context.Background(), "Slow.Sleep", intPtr(0), &r))
				longest = max(longest, time.Since(last))
			}
			if longest >= idle {
				t.Logf("a quiet spell may have lasted %v, past the idle timeout: the machine was too slow to tell that a busy connection is kept", longest)
				return
			}
			assert.Equal(t, int32(1), tt.dials.Load(), "a busy connection was dropped")
		})
	}
}

// A peer that stops half way through a message is dropped too: the idle
// timeout's deadline ends the Recv it holds up; over loopback TCP and over
// a unix socket.
func TestHalfFrameIsDropped(t *testing.T) {
	for _, tc := range transports {
		if tc.name != "tcp" && tc.name != "tcp-unix" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) { testHalfFrameIsDropped(t, tc.listen) })
	}
}

func testHalfFrameIsDropped(t *testing.T, listen string) {
	srv := dispatch.NewServer(dispatch.WithIdleTimeout(150 * time.Millisecond))
	require.NoError(t, dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, a *Args, r *int) error { return nil }))
	addr := serve(t, srv, tcp.New(), listen)
	network := "tcp"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", path
	}
	conn, err := net.Dial(network, addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("ZDIALt\x01\x00" + "\x01\x00\x00")) // the preface, then 3 of a frame's 10-byte prefix
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitLong)))
	_, err = io.Copy(io.Discard, conn) // the server's preface, then the end
	require.NoError(t, err, "the connection was not closed by the server")
}

// A large request, once answered, is not kept by the connection that read
// it once the connection goes quiet: the buffer stays while large requests
// keep coming (growing it again for each would cost more than the
// message), and goes an eighth of the idle timeout after the last (before,
// it stayed until the connection closed: 4 MiB per idle connection).
func TestLargeRequestsAreNotKept(t *testing.T) {
	// The buffer goes once the connection has been quiet an eighth of the
	// idle timeout: a second here, so that the check that it is kept
	// meanwhile has time for its two collections on a loaded machine.
	const idle = 8 * time.Second
	srv := dispatch.NewServer(dispatch.WithIdleTimeout(idle))
	require.NoError(t, dispatch.Handle(srv, "Blob.Len", func(ctx context.Context, b *[]byte, r *int) error { *r = len(*b); return nil }))
	tr := tcp.New()
	addr := serve(t, srv, tr, "127.0.0.1:0")
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	defer sock.Close()
	call := func(seq int, body []byte) {
		t.Helper()
		b, err := codec.Msgpack.Marshal(body)
		require.NoError(t, err)
		require.NoError(t, sock.Send(&transport.Message{Header: map[string]string{"Service-Method": "Blob.Len", "Seq": strconv.Itoa(seq)}, Body: b}))
		var m transport.Message
		require.NoError(t, sock.Recv(&m))
		require.Empty(t, m.Header["Error"])
	}
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	call(0, []byte("hi"))
	before := heap()
	call(1, make([]byte, 3<<20))
	call(2, make([]byte, 3<<20))
	last := time.Now()
	if held := heap() - before; time.Since(last) < idle/8 {
		assert.Greater(t, held, int64(2<<20), "the buffer is kept while large requests come")
	} else {
		t.Logf("the machine took %v to measure: too long to tell that the buffer was kept", time.Since(last))
	}
	assert.Eventually(t, func() bool { return heap()-before < 1<<20 }, idle, 50*time.Millisecond,
		"bytes still held by a quiet connection after 3 MiB requests")
	assert.GreaterOrEqual(t, time.Since(last), idle/8, "the buffer went before the connection was quiet an eighth of the idle timeout")
	call(3, []byte("still served"))
}

// A peer that sends large requests and never reads its replies holds no
// more bytes than WithMaxBytesPerConn (here four requests' worth), however
// many calls the call limit would allow; the calls past it are turned away
// with CodeResourceExhausted. One call larger than the bound is still
// served.
func TestBytesPerConnAreBounded(t *testing.T) {
	srv := dispatch.NewServer(dispatch.WithMaxBytesPerConn(256<<10), dispatch.WithReplyTimeout(time.Minute))
	require.NoError(t, dispatch.Handle(srv, "Blob.Echo", func(ctx context.Context, b *[]byte, r *[]byte) error { *r = *b; return nil }))
	tr := memory.New()
	addr := serve(t, srv, tr, "")

	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	var got []byte
	require.NoError(t, c.Call(context.Background(), "Blob.Echo", make([]byte, 1<<20), &got), "a lone call over the bound")
	assert.Len(t, got, 1<<20)
	c.Close()

	before := runtime.NumGoroutine()
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	// Incompressible, so that each call costs the peer what it costs the
	// server.
	blob := make([]byte, 64<<10)
	rand.NewChaCha8([32]byte{}).Read(blob)
	body, err := codec.Msgpack.Marshal(blob)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			m := &transport.Message{Header: map[string]string{"Service-Method": "Blob.Echo", "Seq": strconv.Itoa(i)}, Body: body}
			if sock.Send(m) != nil {
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the server takes what it will
	assert.LessOrEqual(t, runtime.NumGoroutine()-before, 4+10, "goroutines held by one peer that does not read")
	var m transport.Message
	refused := 0
	for range 200 {
		require.NoError(t, sock.Recv(&m))
		if m.Header["Error-Code"] == string(dispatch.CodeResourceExhausted) {
			refused++
			assert.Contains(t, m.Header["Error"], "too many bytes in flight on this connection (limit 262144)")
			break
		}
	}
	assert.Positive(t, refused, "calls past the bound are turned away")
	sock.Close()
	recv(t, done, waitLong, "the sender to stop")
}

// TestBytesPerConnIsACeiling: a peer over tcp (loopback TCP, a unix
// socket) that sends 64 KiB calls and never reads makes the server hold no
// more than WithMaxBytesPerConn and a small bound beyond it. The replies that cannot be written are counted
// until they are: a reply's copy in the socket's queue, which its sender no
// longer holds, counts as much as the reply did (without it the server held
// 1.5 times the budget: each call's request, its reply, and the copy).
func TestBytesPerConnIsACeiling(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   transport.Transport
		addr string
		// buffered is what the transport holds of its own for a peer
		// that does not read, as a network socket's buffers do: none of
		// the heap over tcp; over memory 64 messages each way, the
		// replies the peer does not read and the requests the server has
		// stopped reading. The bound counted one way only, and the case
		// passed only after tcp's, whose garbage, collected during it,
		// hid 8 MiB: run alone it held 24.5 MiB against 22.
		buffered int64
	}{
		{"tcp", tcp.New(), "127.0.0.1:0", 0},
		{"tcp-unix", tcp.New(), "unix:" + filepath.Join(unixDir, "c*.sock"), 0},
		{"memory", memory.New(), "", 2 * 64 * (64<<10 + 16)},
	} {
		t.Run(tc.name, func(t *testing.T) { testBytesPerConnIsACeiling(t, tc.tr, tc.addr, tc.buffered) })
	}
}

func testBytesPerConnIsACeiling(t *testing.T, tr transport.Transport, listen string, buffered int64) {
	const budget = 16 << 20
	srv := dispatch.NewServer(dispatch.WithMaxBytesPerConn(budget), dispatch.WithReplyTimeout(time.Minute))
	var admitted atomic.Int64
	require.NoError(t, dispatch.Handle(srv, "Blob.Echo", func(ctx context.Context, b *[]byte, r *[]byte) error {
		admitted.Add(1)
		*r = *b
		return nil
	}))
	addr := serve(t, srv, tr, listen)
	// Warm the paths up, so that the baseline holds what any use keeps.
	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	var got []byte
	require.NoError(t, c.Call(context.Background(), "Blob.Echo", make([]byte, 64<<10), &got))
	c.Close()
	before := liveHeap()

	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	// Incompressible, so that each call costs the peer what it costs the
	// server.
	blob := make([]byte, 64<<10)
	rand.NewChaCha8([32]byte{}).Read(blob)
	body, err := codec.Msgpack.Marshal(blob)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 4 * budget / len(body) {
			m := &transport.Message{Header: map[string]string{"Service-Method": "Blob.Echo", "Seq": strconv.Itoa(i)}, Body: body}
			if sock.Send(m) != nil {
				return // closed below: the server stopped reading long before
			}
		}
	}()
	// The server takes what it will, then stops reading: wait until the
	// calls it runs stop growing in number.
	for last := int64(-1); ; {
		time.Sleep(300 * time.Millisecond)
		n := admitted.Load()
		if n > 0 && n == last {
			break
		}
		last = n
	}
	held := liveHeap() - before
	// The bound beyond the budget: what the socket's queue holds of its own
	// (over tcp maxQueued and one frame, twice: the batch being written and
	// the next; over memory one sender's copy), the reader's buffers, and
	// the last call admitted.
	const slack = 2 << 20
	t.Logf("%d calls admitted, %.1f MiB held (budget %d MiB)", admitted.Load(), float64(held)/(1<<20), budget>>20)
	assert.LessOrEqual(t, held, budget+slack+buffered, "heap held by a peer that does not read, against the byte budget")
	sock.Close()
	recv(t, done, waitLong, "the sender to stop")
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
