package httpzerodial_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// A message over the read limit is refused as soon as it is known to be
// over it: unread when its Content-Length (a unary Connect call's body is
// its message) or its envelope (a stream's, gRPC's, gRPC-Web's) announces
// it, and otherwise (a body sent without a length) once the limit and one
// byte more are read. These tests count what the Handler reads of the
// body, and what the server reads off its connections, which net/http's
// own handling of a body left unread adds to (HTTP/1.1 reads on up to 256
// KiB to keep the connection, HTTP/2 takes in what its flow-control window
// let the client send, 1 MiB).

// countingConn counts the bytes read from it into n.
type countingConn struct {
	*net.TCPConn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// A *net.TCPConn beneath, whose CloseWrite net/http uses to end a
	// connection whose request it leaves unread.
	return countingConn{c.(*net.TCPConn), l.n}, nil
}

// countingBody counts the bytes read from it into n.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// counted is a server whose Handler's reading of request bodies (body) and
// whose reading of its connections (conn) are counted.
type counted struct {
	*httptest.Server
	body, conn atomic.Int64
}

func serveCounted(t *testing.T, srv *dispatch.Server, opts ...httpzerodial.Option) *counted {
	c := new(counted)
	h := httpzerodial.NewHandler(srv, opts...)
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A copy of the request: net/http looks at the Body of its own,
		// to end the connection gently when it is left unread.
		r = r.WithContext(r.Context())
		r.Body = countingBody{r.Body, &c.body}
		h.ServeHTTP(w, r)
	}))
	c.Listener = countingListener{c.Listener, &c.conn}
	c.Config.Protocols = httpzerodial.Protocols()
	c.Start()
	t.Cleanup(func() {
		c.Close()
		srv.Close()
	})
	return c
}

// onlyReader hides every method of its reader but Read, so that an HTTP
// client cannot know the body's length and sends it without one.
type onlyReader struct{ io.Reader }

// bigMessage is a JSON message of n bytes: Calc.Add's arguments, padded.
func bigMessage(n int) []byte {
	b := bytes.Repeat([]byte{' '}, n)
	copy(b, `{"a":1,"b":2}`)
	return b
}

func TestOverLimitUnread(t *testing.T) {
	const limit = 64 << 10
	const size = 32 << 20 // the message sent
	// The server reads past what the Handler does only what net/http
	// takes in of a body left unread: far less than the message.
	const connBound = 4 << 20
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serveCounted(t, srv, httpzerodial.WithReadMaxBytes(limit))
	msg := bigMessage(size)

	// post posts body as a unary Connect call (a plain POST of JSON), and
	// returns the status and the Connect error.
	post := func(t *testing.T, h2 bool, body io.Reader) (int, connectError) {
		res, err := httpClient(t, h2).Post(ts.URL+"/Calc/Add", "application/json", body)
		require.NoError(t, err)
		defer res.Body.Close()
		var e connectError
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
		return res.StatusCode, e
	}
	// run runs a case, its counts from zero.
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			ts.body.Store(0)
			ts.conn.Store(0)
			f(t)
		})
	}
	check := func(t *testing.T, wantBody int64) {
		t.Helper()
		t.Logf("the Handler read %d bytes of the body, the server %d off its connection, for a message of %d, limit %d", ts.body.Load(), ts.conn.Load(), size, limit)
		assert.Equal(t, wantBody, ts.body.Load(), "bytes of the body the Handler read")
		assert.Less(t, ts.conn.Load(), int64(connBound), "bytes the server read off its connection")
	}

	for _, h2 := range []bool{false, true} {
		name := map[bool]string{false: "http1", true: "h2c"}[h2]
		run("content-length/"+name, func(t *testing.T) {
			status, e := post(t, h2, bytes.NewReader(msg))
			assert.Equal(t, http.StatusTooManyRequests, status)
			assert.Equal(t, connectError{"resource_exhausted", "httpzerodial: the message's Content-Length, 33554432 bytes, is larger than the read limit of 65536 bytes"}, e)
			check(t, 0)
		})
		run("no-length/"+name, func(t *testing.T) {
			status, e := post(t, h2, onlyReader{bytes.NewReader(msg)})
			assert.Equal(t, http.StatusTooManyRequests, status)
			assert.Equal(t, connectError{"resource_exhausted", "httpzerodial: the message is larger than the read limit of 65536 bytes (reading stopped one byte past it)"}, e)
			check(t, limit+1)
		})
	}
	run("curl", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "message.json")
		require.NoError(t, os.WriteFile(file, msg, 0o600))
		status, e := curlError(t, "--data-binary", "@"+file, ts.URL+"/Calc/Add")
		assert.Equal(t, http.StatusTooManyRequests, status)
		assert.Equal(t, "resource_exhausted", e.Code)
		check(t, 0)
	})
	// connect-go's client, over each protocol: a message's envelope
	// announces its size (a unary Connect call's Content-Length does).
	for _, p := range protocols {
		for _, shape := range []string{"unary", "stream"} {
			run("connect-go/"+p.name+"/"+shape, func(t *testing.T) {
				var err error
				if shape == "unary" {
					_, err = client[[]byte, []byte](t, ts.Server, p, "/Calc/Add", connect.WithCodec(rawCodec{})).CallUnary(context.Background(), connect.NewRequest(&msg))
				} else {
					var st *connect.ServerStreamForClient[[]byte]
					st, err = client[[]byte, []byte](t, ts.Server, p, "/Calc/Count", connect.WithCodec(rawCodec{})).CallServerStream(context.Background(), connect.NewRequest(&msg))
					if err == nil {
						for st.Receive() {
						}
						err = st.Err()
						st.Close()
					}
				}
				assert.Equal(t, connect.CodeResourceExhausted, codeOf(t, err), "%v", err)
				var ce *connect.Error
				require.ErrorAs(t, err, &ce)
				if strings.HasPrefix(p.name, "connect/") && shape == "unary" {
					// A unary Connect call's body is its message.
					assert.Equal(t, "httpzerodial: the message's Content-Length, 33554432 bytes, is larger than the read limit of 65536 bytes", ce.Message())
					check(t, 0)
					return
				}
				assert.Equal(t, "httpzerodial: a message of 33554432 bytes (its envelope says) is larger than the read limit of 65536 bytes", ce.Message())
				check(t, 5)
			})
		}
	}
	// The server goes on.
	res, err := client[Pair, int](t, ts.Server, protocols[0], "/Calc/Add").CallUnary(context.Background(), connect.NewRequest(&Pair{A: 2, B: 3}))
	require.NoError(t, err)
	assert.Equal(t, 5, *res.Msg)
}

// TestAtLimit: a message of exactly the read limit is served, however it
// comes; a byte more is refused.
func TestAtLimit(t *testing.T) {
	const limit = 64 << 10
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv, httpzerodial.WithReadMaxBytes(limit))
	for _, h2 := range []bool{false, true} {
		for _, body := range []func([]byte) io.Reader{
			func(b []byte) io.Reader { return bytes.NewReader(b) },
			func(b []byte) io.Reader { return onlyReader{bytes.NewReader(b)} },
		} {
			res, err := httpClient(t, h2).Post(ts.URL+"/Calc/Add", "application/json", body(bigMessage(limit)))
			require.NoError(t, err)
			out, err := io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, "3", string(out))

			res, err = httpClient(t, h2).Post(ts.URL+"/Calc/Add", "application/json", body(bigMessage(limit+1)))
			require.NoError(t, err)
			out, err = io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, "%s", out)
		}
	}
	for _, p := range protocols {
		for _, path := range []string{"/Calc/Add", "/Calc/Echo"} {
			if !p.h2 && path == "/Calc/Echo" {
				path = "/Calc/Count"
			}
			cl := client[Pair, int](t, ts, p, path, connect.WithCodec(paddedJSON{limit}))
			err := callOnce(cl, path, &Pair{A: 1, B: 2})
			require.NoError(t, err, "%s %s at the limit", p.name, path)
			cl = client[Pair, int](t, ts, p, path, connect.WithCodec(paddedJSON{limit + 1}))
			err = callOnce(cl, path, &Pair{A: 1, B: 2})
			assert.Equal(t, connect.CodeResourceExhausted, codeOf(t, err), "%s %s a byte past the limit: %v", p.name, path, err)
		}
	}
}

// callOnce makes one call of path with cl: a unary call of Calc.Add, or a
// stream of one message otherwise.
func callOnce(cl *connect.Client[Pair, int], path string, msg *Pair) error {
	if path == "/Calc/Add" {
		_, err := cl.CallUnary(context.Background(), connect.NewRequest(msg))
		return err
	}
	if strings.HasSuffix(path, "Count") {
		st, err := cl.CallServerStream(context.Background(), connect.NewRequest(msg))
		if err != nil {
			return err
		}
		defer st.Close()
		for st.Receive() {
		}
		return st.Err()
	}
	st := cl.CallBidiStream(context.Background())
	if err := st.Send(msg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := st.CloseRequest(); err != nil {
		return err
	}
	defer st.CloseResponse()
	for {
		if _, err := st.Receive(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
