package dispatch_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
)

// Hostile peers of ServeCodec on real codecs (gobrpc's, net/rpc/jsonrpc's):
// each gets a clear error or the end of its connection, ServeCodec
// returns, and the same Server goes on serving the real clients.

// errLog is a slog.Handler that keeps each record's message and its "err"
// attribute, for a test to look at the error a Server logged.
type errLog struct {
	mu   sync.Mutex
	recs []errRecord
}

type errRecord struct {
	msg string
	err error
}

func (l *errLog) logger() *slog.Logger                     { return slog.New(l) }
func (l *errLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *errLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *errLog) WithGroup(string) slog.Handler            { return l }

func (l *errLog) Handle(_ context.Context, r slog.Record) error {
	rec := errRecord{msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok && a.Key == "err" {
			rec.err = e
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, rec)
	return nil
}

// errs returns the errors of the records whose message is msg.
func (l *errLog) errs(msg string) []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []error
	for _, r := range l.recs {
		if r.msg == msg {
			out = append(out, r.err)
		}
	}
	return out
}

// arithServer returns a Server of a (newArith's when nil) as "Arith", which
// the test closes when it ends.
func arithServer(t *testing.T, a *Arith, opts ...dispatch.ServerOption) *dispatch.Server {
	t.Helper()
	if a == nil {
		a = newArith()
	}
	srv := dispatch.NewServer(opts...)
	require.NoError(t, srv.RegisterName("Arith", a))
	t.Cleanup(func() { srv.Close() })
	return srv
}

// servePipe runs srv.ServeCodec on the server's end of a net.Pipe, with
// the codec newCodec makes, and returns the client's end and a channel
// closed when ServeCodec returns. The cleanup closes the client's end and
// waits for that.
func servePipe(t *testing.T, srv *dispatch.Server, newCodec func(net.Conn) rpc.ServerCodec) (net.Conn, <-chan struct{}) {
	cc, sc := net.Pipe()
	// A server that never answers, or never reads, fails the test rather
	// than hanging it.
	require.NoError(t, cc.SetDeadline(time.Now().Add(4*waitLong)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeCodec(newCodec(sc))
	}()
	t.Cleanup(func() {
		cc.Close()
		recv(t, done, waitLong, "ServeCodec's return")
	})
	return cc, done
}

func gobServerCodec(c net.Conn) rpc.ServerCodec  { return gobrpc.NewServerCodec(c) }
func jsonServerCodec(c net.Conn) rpc.ServerCodec { return jsonrpc.NewServerCodec(c) }

// assertServes checks that srv serves a new connection of the standard
// library's clients, gob (rpc.NewClient over gobrpc) and JSON-RPC, and
// that ServeCodec returns when each hangs up.
func assertServes(t *testing.T, srv *dispatch.Server) {
	t.Helper()
	for name, c := range map[string]struct {
		server func(net.Conn) rpc.ServerCodec
		client func(io.ReadWriteCloser) *rpc.Client
	}{
		"gob":     {gobServerCodec, rpc.NewClient},
		"jsonrpc": {jsonServerCodec, jsonrpc.NewClient},
	} {
		cc, sc := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeCodec(c.server(sc))
		}()
		client := c.client(cc)
		var n int
		err := callWithin(client, "Arith.Multiply", Args{6, 7}, &n)
		client.Close()
		recv(t, done, waitLong, "ServeCodec's return for a new "+name+" client")
		if assert.NoError(t, err, "a new %s client", name) {
			assert.Equal(t, 42, n, "a new %s client", name)
		}
	}
}

// callWithin makes a call of c and returns its error, or an error saying
// that no reply came within waitLong: a server that answers under another
// Seq, or not at all, would leave c.Call waiting for good.
func callWithin(c *rpc.Client, method string, args, reply any) error {
	call := c.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-time.After(waitLong):
		return fmt.Errorf("%s: no reply within %v", method, waitLong)
	}
}

// gobOf returns the gob stream of vs, in one encoder: what net/rpc's gob
// codec writes for them (a type's definition before its first value).
func gobOf(t *testing.T, vs ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	for _, v := range vs {
		require.NoError(t, enc.Encode(v))
	}
	return b.Bytes()
}

// TestServeCodecGobBodyOverLimit: the standard library's client sends a
// []byte argument over gobrpc's default limit. The call fails — with the
// limit's words when the reply outruns the connection's end — the Server
// logs the *gobrpc.MessageTooLargeError that ended the connection, the
// connection is closed, and a new client is served.
func TestServeCodecGobBodyOverLimit(t *testing.T) {
	log := &errLog{}
	srv := arithServer(t, nil, dispatch.WithLogger(log.logger()))
	addr := serveNetRPC(t, srv, gobServerCodec)
	c, err := rpc.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()

	var echo []byte
	err = callWithin(c, "Arith.Echo", make([]byte, gobrpc.DefaultMaxMessage+1<<20), &echo)
	require.Error(t, err)
	var se rpc.ServerError
	if errors.As(err, &se) {
		assert.Regexp(t, `^dispatch: decoding arguments of Arith.Echo: gobrpc: message of \d+ bytes, limit 4194304$`, string(se))
	}
	require.Eventually(t, func() bool { return len(log.errs("dispatch: net/rpc connection ended")) > 0 }, waitLong, time.Millisecond)
	var tooLarge *gobrpc.MessageTooLargeError
	require.ErrorAs(t, log.errs("dispatch: net/rpc connection ended")[0], &tooLarge)
	assert.Equal(t, uint64(gobrpc.DefaultMaxMessage), tooLarge.Limit)
	assert.Greater(t, tooLarge.Size, uint64(gobrpc.DefaultMaxMessage+1<<20))
	require.Eventually(t, func() bool { return callWithin(c, "Arith.Multiply", Args{1, 2}, new(int)) != nil }, waitLong, time.Millisecond,
		"the connection closes")

	fresh, err := rpc.Dial("tcp", addr)
	require.NoError(t, err)
	defer fresh.Close()
	var n int
	require.NoError(t, callWithin(fresh, "Arith.Multiply", Args{6, 7}, &n))
	assert.Equal(t, 42, n)
	assertServes(t, srv)
}

// TestServeCodecGobCountOverLimit: a request header, then a body whose
// count declares 64 MiB, sent as raw bytes. The call is answered with the
// limit's words, the connection ends, and none of the 64 MiB is allocated.
func TestServeCodecGobCountOverLimit(t *testing.T) {
	srv := arithServer(t, nil)
	header := gobOf(t, rpc.Request{ServiceMethod: "Arith.Echo", Seq: 1})
	count := []byte{0xfc, 0x04, 0, 0, 0} // 64 MiB in gob's encoding of a count

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cc, done := servePipe(t, srv, gobServerCodec)
	_, err := cc.Write(header)
	require.NoError(t, err)
	_, err = cc.Write(count)
	require.NoError(t, err)
	dec := gob.NewDecoder(cc)
	var resp rpc.Response
	require.NoError(t, dec.Decode(&resp))
	require.NoError(t, dec.Decode(new(struct{})), "the body")
	assert.Equal(t, rpc.Response{ServiceMethod: "Arith.Echo", Seq: 1,
		Error: "dispatch: decoding arguments of Arith.Echo: gobrpc: message of 67108864 bytes, limit 4194304"}, resp)
	assert.ErrorIs(t, dec.Decode(&resp), io.EOF, "the connection ends")
	recv(t, done, waitLong, "ServeCodec's return")
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2<<20), "bytes allocated for a count of 64 MiB")
	assertServes(t, srv)
}

// TestServeCodecGobHalfTypeDefinition: a peer sends half of the type
// definition the first request begins with. If it hangs up, ServeCodec
// returns. If it stalls, ServeCodec waits on its read, on its own
// goroutine and nothing else (ServeCodec has no idle timeout: see its
// doc), the Server serves other clients meanwhile, and Close ends it, as
// Shutdown does (nothing is in flight, so it closes the connection at once).
func TestServeCodecGobHalfTypeDefinition(t *testing.T) {
	stream := gobOf(t, rpc.Request{ServiceMethod: "Arith.Multiply", Seq: 1})
	require.Less(t, stream[0], byte(0x80), "a one-byte count")
	half := stream[:1+int(stream[0])/2]

	t.Run("hangs up", func(t *testing.T) {
		srv := arithServer(t, nil)
		cc, done := servePipe(t, srv, gobServerCodec)
		_, err := cc.Write(half)
		require.NoError(t, err)
		quiet(t, done, "ServeCodec's return before the hang-up")
		require.NoError(t, cc.Close())
		recv(t, done, waitLong, "ServeCodec's return after the hang-up")
		assertServes(t, srv)
	})

	for _, stop := range []struct {
		name string
		stop func(*dispatch.Server) error
	}{
		{"Close", (*dispatch.Server).Close},
		{"Shutdown", func(srv *dispatch.Server) error { return srv.Shutdown(context.Background()) }},
	} {
		t.Run("stalls until "+stop.name, func(t *testing.T) {
			srv := arithServer(t, nil)
			cc, done := servePipe(t, srv, gobServerCodec)
			_, err := cc.Write(half) // returns once the codec has read all of it
			require.NoError(t, err)
			quiet(t, done, "ServeCodec's return while the peer stalls")
			assert.Equal(t, 1, goroutinesIn("dispatch.(*Server).ServeCodec"), "goroutines of ServeCodec")
			// No call was read, so no worker runs for this connection (another
			// Server's idle workers may be parked in dispatch: not counted).
			assert.Equal(t, 1, goroutinesIn("zerodial/transport/gobrpc."), "goroutines in gobrpc")
			assertServes(t, srv)
			require.NoError(t, stop.stop(srv))
			recv(t, done, waitLong, "ServeCodec's return after "+stop.name)
			_, err = cc.Read(make([]byte, 1))
			assert.ErrorIs(t, err, io.EOF, "the peer sees its connection closed")
		})
	}
}

// goroutinesIn counts the goroutines whose stack mentions fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// TestServeCodecJSONMalformed: JSON-RPC requests no client should send.
// What cannot be read as a request ends the connection with no reply (as
// net/rpc's Server does), logged at Debug unless it is the end of the
// stream; a request whose params are wrong is answered with the codec's
// words and the connection goes on.
func TestServeCodecJSONMalformed(t *testing.T) {
	log := &errLog{}
	srv := arithServer(t, nil, dispatch.WithLogger(log.logger()))
	const ended = "dispatch: net/rpc connection ended"

	for _, tc := range []struct {
		name, input string
		hangUp      bool   // the peer closes after the input
		logged      string // the error logged; "" for none
	}{
		{"cut short", `{"method":`, true, ""},
		{"cut by garbage", `{"method": ]`, false, "invalid character ']' looking for beginning of value"},
		{"an array", `[1, 2, 3]`, false, "json: cannot unmarshal array into Go value of type jsonrpc.serverRequest"},
		{"a number", `42 `, false, "json: cannot unmarshal number into Go value of type jsonrpc.serverRequest"},
		{"a method that is not a string", `{"method": 1, "params": [], "id": 1}`, false,
			"json: cannot unmarshal number into Go struct field serverRequest.method of type string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(log.errs(ended))
			cc, done := servePipe(t, srv, jsonServerCodec)
			_, err := cc.Write([]byte(tc.input))
			require.NoError(t, err)
			if tc.hangUp {
				require.NoError(t, cc.Close())
			} else {
				rest, err := io.ReadAll(cc)
				require.NoError(t, err, "the server closes the connection")
				assert.Empty(t, string(rest), "the server's reply")
			}
			recv(t, done, waitLong, "ServeCodec's return")
			logged := log.errs(ended)[before:]
			if tc.logged == "" {
				assert.Empty(t, logged)
			} else if assert.Len(t, logged, 1) {
				assert.EqualError(t, logged[0], tc.logged)
			}
		})
	}

	t.Run("params", func(t *testing.T) {
		cc, _ := servePipe(t, srv, jsonServerCodec)
		dec := json.NewDecoder(cc)
		ask := func(req string) map[string]any {
			t.Helper()
			_, err := io.WriteString(cc, req)
			require.NoError(t, err)
			var reply map[string]any
			require.NoError(t, dec.Decode(&reply))
			return reply
		}
		assert.Equal(t, map[string]any{"id": 1.0, "result": nil,
			"error": "dispatch: decoding arguments of Arith.Multiply: json: cannot unmarshal object into Go value of type [1]interface {}"},
			ask(`{"method": "Arith.Multiply", "params": {"A": 6, "B": 7}, "id": 1}`))
		assert.Equal(t, map[string]any{"id": "two", "result": nil,
			"error": "dispatch: decoding arguments of Arith.Multiply: jsonrpc: request body missing params"},
			ask(`{"method": "Arith.Multiply", "id": "two"}`))
		assert.Equal(t, map[string]any{"id": 3.0, "result": nil,
			"error": "dispatch: decoding arguments of Arith.Multiply: json: cannot unmarshal string into Go value of type dispatch_test.Args"},
			ask(`{"method": "Arith.Multiply", "params": ["six"], "id": 3}`))
		assert.Equal(t, map[string]any{"id": 4.0, "result": 42.0, "error": nil},
			ask(`{"method": "Arith.Multiply", "params": [{"A": 6, "B": 7}], "id": 4}`))
	})
	assertServes(t, srv)
}

// TestServeCodecJSONUnreadReplies: a client writes requests and never
// reads a reply. The first reply's write blocks (a net.Pipe has no
// buffer; over TCP, once the socket's buffers are full), the calls after
// it stay in flight up to WithMaxCallsPerConn, the refusal of the next one
// waits to be written too, and the Server stops reading: the client's
// writes block, and the connection holds no more than its limit of calls.
// When the client hangs up, the writes fail, the connection closes, and
// ServeCodec returns.
func TestServeCodecJSONUnreadReplies(t *testing.T) {
	const limit = 4
	var handled atomic.Int32
	srv := arithServer(t, nil, dispatch.WithMaxCallsPerConn(limit), dispatch.WithInterceptors(
		func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
			handled.Add(1)
			return next(ctx, args, reply)
		}))
	cc, done := servePipe(t, srv, jsonServerCodec)

	var sent atomic.Int32
	wrote := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if _, err := io.WriteString(cc, `{"method": "Arith.Multiply", "params": [{"A": 6, "B": 7}], "id": 1}`+"\n"); err != nil {
				wrote <- err
				return
			}
			sent.Add(1)
		}
	}()
	require.Eventually(t, func() bool { return handled.Load() == limit }, waitLong, time.Millisecond)
	// The server has stopped reading: the count of requests written stops.
	var last int32 = -1
	require.Eventually(t, func() bool {
		n := sent.Load()
		still := n == last
		last = n
		return still
	}, waitLong, 20*time.Millisecond)
	quiet(t, wrote, "a write's end while the server is stuck")
	assert.Equal(t, int32(limit), handled.Load(), "calls run")
	assert.Less(t, sent.Load(), int32(100), "requests the server took in")

	require.NoError(t, cc.Close())
	assert.ErrorIs(t, recv(t, wrote, waitLong, "the blocked write's end"), io.ErrClosedPipe)
	recv(t, done, waitLong, "ServeCodec's return")
	assertServes(t, srv)
}

// TestServeCodecGobRefusals adds to TestServeCodecGob what
// TestServeCodecJSONRPC has seen over JSON-RPC: the panic rule and a
// streaming method refused, then the connection goes on.
func TestServeCodecGobRefusals(t *testing.T) {
	srv := arithServer(t, nil)
	require.NoError(t, dispatch.HandleStream(srv, "Feed.Count", func(ctx context.Context, s *dispatch.ServerStream[Args, int]) error { return nil }))
	cc, _ := servePipe(t, srv, gobServerCodec)
	c := rpc.NewClient(cc)
	defer c.Close()
	var n int
	assert.Equal(t, rpc.ServerError("dispatch: panic in Arith.Panic: kaboom"), callWithin(c, "Arith.Panic", Args{}, &n))
	assert.Equal(t, rpc.ServerError("dispatch: Feed.Count is a streaming method; call it with OpenStream or CallStream"), callWithin(c, "Feed.Count", Args{}, &n))
	assert.Equal(t, rpc.ServerError("rpc: can't find service Nope.Nope"), callWithin(c, "Nope.Nope", Args{}, &n))
	require.NoError(t, callWithin(c, "Arith.Multiply", Args{6, 7}, &n))
	assert.Equal(t, 42, n)
}
