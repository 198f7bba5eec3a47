package dispatch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// The wire's limits on a connection served by ServeConn, met by the
// standard library's clients, each followed by the Server serving others.

// TestServeConnBytesRefusal: a call whose request would take the
// connection past WithMaxBytesPerConn, while another holds most of it, is
// refused with the wire's words, and the connection goes on: a small call
// is served at once, and the large one once the first is answered.
func TestServeConnBytesRefusal(t *testing.T) {
	const limit = 64 << 10
	for _, nc := range netrpcClients {
		t.Run(nc.name, func(t *testing.T) {
			a := newArith()
			srv := arithServer(t, a, dispatch.WithMaxBytesPerConn(limit))
			c := serveConns(t, srv, nc.codec).dial(t, nc.client)
			releaseAtEnd(t, a)

			var first Blob
			held := c.Go("Arith.SlowEcho", &Delayed{Delay: 60_000, Data: bytes.Repeat([]byte{1}, 36<<10)}, &first, nil)
			recv(t, a.echoStarted, waitLong, "the slow call")

			big := bytes.Repeat([]byte{2}, 30<<10)
			var echoed []byte
			err := callWithin(c, "Arith.Echo", big, &echoed)
			assert.Equal(t, "dispatch: too many bytes in flight on this connection (limit 65536)", serverErr(t, err))

			var n int
			require.NoError(t, callWithin(c, "Arith.Multiply", Args{6, 7}, &n), "a small call on the same connection")
			assert.Equal(t, 42, n)

			a.echoRelease <- struct{}{}
			recv(t, held.Done, waitLong, "the slow call's answer")
			require.NoError(t, held.Error)
			assert.Len(t, first.Data, 36<<10)
			// The first call counts until its reply is written, which its
			// caller may read a moment before the count is let go.
			require.Eventually(t, func() bool { return callWithin(c, "Arith.Echo", big, &echoed) == nil }, waitLong, time.Millisecond)
			assert.Equal(t, big, echoed)
			assertServesConns(t, srv)
		})
	}
}

// TestServeConnOneCallAlwaysAdmitted: as on the wire, a connection's only
// call is admitted whatever WithMaxBytesPerConn says, up to the limit of
// one request.
func TestServeConnOneCallAlwaysAdmitted(t *testing.T) {
	srv := arithServer(t, nil, dispatch.WithMaxBytesPerConn(64<<10))
	c := serveConns(t, srv, gobConnCodec).dial(t, rpc.NewClient)
	big := bytes.Repeat([]byte{3}, 60<<10)
	var echoed []byte
	require.NoError(t, callWithin(c, "Arith.Echo", big, &echoed))
	assert.Equal(t, big, echoed)
}

// allocDuring returns the bytes the process allocates while f runs.
func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hugeRequest is larger than anything the Server may hold of one request;
// serverBound is a generous bound on what the Server allocates for one it
// refuses, far below what holding it would take.
const (
	hugeRequest = 64 << 20
	serverBound = 32 << 20
)

// tooLargeLogged waits for the Server to log that a request too large
// ended a connection, and returns the error it logged.
func tooLargeLogged(t *testing.T, log *errLog) error {
	t.Helper()
	const msg = "dispatch: closing net/rpc connection: a request is too large"
	require.Eventually(t, func() bool { return len(log.errs(msg)) > 0 }, waitLong, time.Millisecond, "the log of the request too large")
	return log.errs(msg)[0]
}

// hugeClientAddr names the environment variable that makes
// TestServeConnHugeJSONClient a client of the Server at its address.
const hugeClientAddr = "DISPATCH_TEST_HUGE_JSONRPC_ADDR"

// TestServeConnHugeJSONString: the standard library's JSON-RPC client sends
// a string of 64 MiB. The Server reads 4 MiB of it, the limit of one
// request, and ends the connection, logging why, having allocated far less
// than the string; then it serves others. The client runs in a process of
// its own (this test binary, running TestServeConnHugeJSONClient), so that
// what it allocates to send the string is not counted.
func TestServeConnHugeJSONString(t *testing.T) {
	log := &errLog{}
	srv := arithServer(t, nil, dispatch.WithLogger(log.logger()))
	cs := serveConns(t, srv, jsonConnCodec)

	alloc := allocDuring(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 8*waitLong)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestServeConnHugeJSONClient$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), hugeClientAddr+"="+cs.addr)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the client:\n%s", out)
		require.Contains(t, string(out), "the huge call failed", "the client:\n%s", out)
		recv(t, cs.ended, waitLong, "ServeConn's return")
	})
	assert.Less(t, alloc, uint64(serverBound), "the Server allocated %d MiB for a request it refused", alloc>>20)

	logged := tooLargeLogged(t, log)
	assert.ErrorIs(t, logged, transport.ErrFrameTooLarge)
	assert.Contains(t, logged.Error(), fmt.Sprintf("limit %d", transport.DefaultMaxFrameSize))
	assertServesConns(t, srv)
}

// TestServeConnHugeJSONClient is TestServeConnHugeJSONString's client, run
// in a process of its own; skipped otherwise.
func TestServeConnHugeJSONClient(t *testing.T) {
	addr := os.Getenv(hugeClientAddr)
	if addr == "" {
		t.Skip("the client of TestServeConnHugeJSONString, run by it")
	}
	c, err := jsonrpc.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	var out []byte
	err = callWithin(c, "Arith.Echo", strings.Repeat("a", hugeRequest), &out)
	require.Error(t, err)
	t.Logf("the huge call failed: %v", err)
}

// TestServeConnEndlessJSONString: raw bytes of a JSON-RPC request whose
// string never ends. The Server closes the connection once it has read the
// limit of one request, having allocated a bounded amount, and logs why.
func TestServeConnEndlessJSONString(t *testing.T) {
	log := &errLog{}
	srv := arithServer(t, nil, dispatch.WithLogger(log.logger()))
	cs := serveConns(t, srv, jsonConnCodec)
	chunk := bytes.Repeat([]byte{'a'}, 64<<10)

	var sent int
	alloc := allocDuring(func() {
		conn, err := net.Dial("tcp", cs.addr)
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(4*waitLong)))
		_, err = io.WriteString(conn, `{"method":"Arith.Echo","id":1,"params":["`)
		require.NoError(t, err)
		for sent < hugeRequest {
			n, err := conn.Write(chunk)
			sent += n
			if err != nil {
				break
			}
		}
		recv(t, cs.ended, 4*waitLong, "ServeConn's return")
		_, err = conn.Read(make([]byte, 1))
		assert.Error(t, err, "the connection is closed")
	})
	assert.Less(t, sent, hugeRequest, "the Server read the whole request")
	assert.Less(t, alloc, uint64(serverBound), "the Server allocated %d MiB for a request it refused", alloc>>20)
	assert.ErrorIs(t, tooLargeLogged(t, log), transport.ErrFrameTooLarge)
	assertServesConns(t, srv)
}

// TestServeConnGobRequestOverConnLimit: with WithMaxBytesPerConn below
// gobrpc's own limit, the standard library's gob client sends a request
// larger than the connection may hold. Its call is answered with the
// codec's failure (its header was whole, its body too large), then the
// connection ends, the Server logs ErrFrameTooLarge, and serves others.
func TestServeConnGobRequestOverConnLimit(t *testing.T) {
	log := &errLog{}
	srv := arithServer(t, nil, dispatch.WithLogger(log.logger()), dispatch.WithMaxBytesPerConn(1<<20))
	cs := serveConns(t, srv, gobConnCodec)
	c := cs.dial(t, rpc.NewClient)
	var out []byte
	err := callWithin(c, "Arith.Echo", make([]byte, 2<<20), &out)
	assert.True(t, strings.HasPrefix(serverErr(t, err), "dispatch: decoding arguments of Arith.Echo: transport: frame too large: "), "the call's answer: %v", err)
	recv(t, cs.ended, waitLong, "ServeConn's return")
	logged := tooLargeLogged(t, log)
	assert.ErrorIs(t, logged, transport.ErrFrameTooLarge)
	assert.Contains(t, logged.Error(), "limit 1048576")
	assertServesConns(t, srv)
}

// TestServeConnIdle: a connection of either client that sends nothing
// with no call in flight is closed after the idle timeout, not before; the
// client's next call fails; the Server serves others.
func TestServeConnIdle(t *testing.T) {
	const idle = 200 * time.Millisecond
	for _, nc := range netrpcClients {
		t.Run(nc.name, func(t *testing.T) {
			srv := arithServer(t, nil, dispatch.WithIdleTimeout(idle))
			cs := serveConns(t, srv, nc.codec)
			c := cs.dial(t, nc.client)
			var n int
			// Before the call: the server's last activity, the reply,
			// comes after; taken after the call, on a loaded machine that
			// ran the caller late, it was later than the reply by as much.
			last := time.Now()
			require.NoError(t, callWithin(c, "Arith.Multiply", Args{6, 7}, &n))
			recv(t, cs.ended, waitLong, "the idle connection's end")
			assert.GreaterOrEqual(t, time.Since(last), idle, "closed before the idle timeout")
			err := callWithin(c, "Arith.Multiply", Args{6, 7}, &n)
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = callWithin(c, "Arith.Multiply", Args{6, 7}, &n)
			}
			assert.ErrorIs(t, err, rpc.ErrShutdown)
			assertServesConns(t, srv)
		})
	}
}

// TestServeConnIdleBusy: a connection whose only call runs far longer than
// the idle timeout is not idle; once the call is answered, it is.
func TestServeConnIdleBusy(t *testing.T) {
	const idle = 100 * time.Millisecond
	a := newArith()
	srv := arithServer(t, a, dispatch.WithIdleTimeout(idle))
	cs := serveConns(t, srv, jsonConnCodec)
	releaseAtEnd(t, a)
	c := cs.dial(t, jsonrpc.NewClient)
	var out Blob
	held := c.Go("Arith.SlowEcho", &Delayed{Delay: 60_000, Data: []byte{7}}, &out, nil)
	recv(t, a.echoStarted, waitLong, "the slow call")
	select {
	case <-cs.ended:
		t.Fatal("a connection with a call in flight was closed as idle")
	case <-time.After(5 * idle):
	}
	a.echoRelease <- struct{}{}
	recv(t, held.Done, waitLong, "the slow call's answer")
	require.NoError(t, held.Error)
	assert.Equal(t, []byte{7}, out.Data)
	recv(t, cs.ended, waitLong, "the connection's end once idle")
}

// TestServeConnIdleHalfRequest: a peer that stops half way through a
// request is idle, as on the wire: its connection is closed.
func TestServeConnIdleHalfRequest(t *testing.T) {
	srv := arithServer(t, nil, dispatch.WithIdleTimeout(100*time.Millisecond))
	cs := serveConns(t, srv, jsonConnCodec)
	conn, err := net.Dial("tcp", cs.addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(waitLong)))
	_, err = io.WriteString(conn, `{"method":"Arith.Multiply","params":[{"A":`)
	require.NoError(t, err)
	recv(t, cs.ended, waitLong, "the stalled connection's end")
	_, err = conn.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)
	assertServesConns(t, srv)
}

// Big makes replies far larger than their requests.
type Big struct{}

// Make replies n bytes.
func (Big) Make(n int, reply *[]byte) error {
	*reply = make([]byte, n)
	return nil
}

// unread is a client's connection whose reading waits until the test lets
// it: a client over it sends its calls and does not read their replies.
type unread struct {
	net.Conn
	read chan struct{}
}

func (u *unread) Read(p []byte) (int, error) {
	<-u.read
	return u.Conn.Read(p)
}

// TestServeConnReplyTimeout: a client of either kind that does not read its
// replies has its connection closed once a reply has waited the reply
// timeout, and the Server logs why, as on the wire; then it serves others.
func TestServeConnReplyTimeout(t *testing.T) {
	const replyTimeout = 200 * time.Millisecond
	for _, nc := range netrpcClients {
		t.Run(nc.name, func(t *testing.T) {
			log := &errLog{}
			srv := arithServer(t, nil, dispatch.WithReplyTimeout(replyTimeout), dispatch.WithLogger(log.logger()))
			require.NoError(t, srv.RegisterName("Big", Big{}))
			cs := serveConns(t, srv, nc.codec)
			conn, err := net.Dial("tcp", cs.addr)
			require.NoError(t, err)
			require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4<<10))
			u := &unread{Conn: conn, read: make(chan struct{})}
			c := nc.client(u)
			calls := make([]*rpc.Call, 8)
			// Before the calls: the first reply may begin, and the reply
			// timeout with it, before Go returns.
			start := time.Now()
			for i := range calls {
				var out []byte
				calls[i] = c.Go("Big.Make", 4<<20, &out, make(chan *rpc.Call, 1))
			}
			recv(t, cs.ended, 4*waitLong, "the stalled connection's end")
			assert.GreaterOrEqual(t, time.Since(start), replyTimeout, "closed before the reply timeout")
			const msg = "dispatch: closing connection: a reply could not be written in time; the peer is not reading"
			assert.NotEmpty(t, log.errs(msg), "the log of the stall")

			close(u.read)
			c.Close()
			failed := 0
			for _, call := range calls {
				recv(t, call.Done, waitLong, "a call's end")
				if call.Error != nil {
					failed++
				}
			}
			assert.NotZero(t, failed, "every reply of a stalled connection was written")
			assertServesConns(t, srv)
		})
	}
}
