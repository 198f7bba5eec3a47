package httpzerodial_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

func TestClientStallsMidBody(t *testing.T) {
	// A client that stops half way through its body holds its own request,
	// and nothing else: other calls go on, and when it goes away its
	// request ends (goleak checks that nothing is left behind).
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	var stalled []net.Conn
	for _, path := range []string{"/Calc/Add", "/Calc/Count"} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		require.NoError(t, err)
		stalled = append(stalled, conn)
		ct := "application/json"
		if path == "/Calc/Count" {
			ct = "application/connect+json"
		}
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: 100\r\n\r\n%s", path, ct, `{"a":`)
		require.NoError(t, err)

		res, err := client[Pair, int](t, ts, protocols[1], "/Calc/Add").CallUnary(context.Background(), connect.NewRequest(&Pair{A: 1, B: 1}))
		require.NoError(t, err)
		assert.Equal(t, 2, *res.Msg)

		// Nothing has been answered to the stalled client.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		var b [1]byte
		_, err = conn.Read(b[:])
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout(), "%v", err)
	}
	// The Server's Shutdown does not wait for the stalled requests, which
	// have not reached a handler: connect-go reads a message whole first.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	for _, conn := range stalled {
		conn.Close()
	}
}

func TestStreamClientGoesAway(t *testing.T) {
	// A bidi stream whose client stops sending holds its handler (in
	// Recv), and Shutdown waits for it, as for any stream in flight; when
	// the client goes away, the handler's Recv ends and so does the wait.
	for _, p := range h2() {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			ctx, cancel := context.WithCancel(context.Background())
			st := client[Pair, int](t, ts, p, "/Calc/Echo").CallBidiStream(ctx)
			require.NoError(t, st.Send(&Pair{A: 1}))
			_, err := st.Receive() // the handler is running
			require.NoError(t, err)

			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(context.Background()) }()
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned with a stream in flight: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			// Gone: its context ended and its side of the stream let go
			// of, which resets the HTTP/2 stream.
			cancel()
			st.CloseResponse()
			require.NoError(t, recv(t, shut, "Shutdown, once the client has gone"))
		})
	}
}

// stalledHTTP1 sends, on a connection of its own, an HTTP/1.1 request of
// path whose body of 100 bytes stops after body, and returns the answer,
// which must come before the hang guard of 20 s.
func stalledHTTP1(t *testing.T, ts *httptest.Server, path string, header string, body []byte) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: 100\r\n\r\n%s", path, header, body)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the answer to a request whose body stalled")
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, out
}

// endOfStream returns the error of a Connect stream's end message, the
// last envelope of out.
func endOfStream(t *testing.T, out []byte) connectError {
	t.Helper()
	for len(out) >= 5 {
		n := int(binary.BigEndian.Uint32(out[1:5]))
		require.GreaterOrEqual(t, len(out), 5+n)
		if out[0]&2 != 0 {
			var end struct{ Error connectError }
			require.NoError(t, json.Unmarshal(out[5:5+n], &end), "%q", out[5:5+n])
			return end.Error
		}
		out = out[5+n:]
	}
	t.Fatalf("no end of stream in %q", out)
	return connectError{}
}

// TestBodyStallsPastDeadline: a request whose body stalls half way is
// answered with deadline_exceeded once its deadline (Connect-Timeout-Ms,
// grpc-timeout) passes, over HTTP/1.1 and h2c, for a unary call and a
// stream: the deadline bounds the reading of the body, which connect-go
// would wait for as long as the client held it. (The deadline is 300 ms;
// the tests wait for the answer up to a hang guard of 20 s, and assert
// what it says, not when it came.)
func TestBodyStallsPastDeadline(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	half := envelope(0, `{"a":1,"b":2}`)[:10]

	t.Run("connect/http1/unary", func(t *testing.T) {
		res, out := stalledHTTP1(t, ts, "/Calc/Add", "Content-Type: application/json\r\nConnect-Timeout-Ms: 300\r\n", []byte(`{"a":`))
		assert.Equal(t, http.StatusGatewayTimeout, res.StatusCode)
		var e connectError
		require.NoError(t, json.Unmarshal(out, &e), "%q", out)
		assert.Equal(t, connectError{"deadline_exceeded", "httpzerodial: the request's deadline passed before its body had arrived"}, e)
	})
	t.Run("connect/http1/stream", func(t *testing.T) {
		res, out := stalledHTTP1(t, ts, "/Calc/Count", "Content-Type: application/connect+json\r\nConnect-Timeout-Ms: 300\r\n", half)
		assert.Equal(t, http.StatusOK, res.StatusCode)
		assert.Equal(t, "deadline_exceeded", endOfStream(t, out).Code)
	})
	t.Run("grpcweb/http1", func(t *testing.T) {
		res, _ := stalledHTTP1(t, ts, "/Calc/Add", "Content-Type: application/grpc-web+json\r\nGrpc-Timeout: 300m\r\n", half)
		assert.Equal(t, "4", res.Header.Get("Grpc-Status"), "deadline_exceeded")
	})
	// h2c: net/http's client, whose request body is a pipe that has given
	// half a message.
	for _, tc := range []struct {
		name, path, contentType, timeout, value string
	}{
		{"connect/h2c/unary", "/Calc/Add", "application/json", "Connect-Timeout-Ms", "300"},
		{"connect/h2c/stream", "/Calc/Echo", "application/connect+json", "Connect-Timeout-Ms", "300"},
		{"grpc/h2c/unary", "/Calc/Add", "application/grpc+json", "Grpc-Timeout", "300m"},
		{"grpc/h2c/stream", "/Calc/Echo", "application/grpc+json", "Grpc-Timeout", "300m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the hang guard
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+tc.path, pr)
			require.NoError(t, err)
			req.Header.Set("Content-Type", tc.contentType)
			req.Header.Set("Te", "trailers")
			req.Header.Set(tc.timeout, tc.value)
			go func() {
				b := half
				if tc.contentType == "application/json" {
					b = []byte(`{"a":`)
				}
				_, _ = pw.Write(b)
			}()
			res, err := httpClient(t, true).Do(req)
			require.NoError(t, err, "the answer to a request whose body stalled")
			defer res.Body.Close()
			out, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			switch tc.contentType {
			case "application/json":
				assert.Equal(t, http.StatusGatewayTimeout, res.StatusCode)
				var e connectError
				require.NoError(t, json.Unmarshal(out, &e), "%q", out)
				assert.Equal(t, "deadline_exceeded", e.Code)
			case "application/connect+json":
				assert.Equal(t, "deadline_exceeded", endOfStream(t, out).Code)
			default:
				assert.Equal(t, "4", res.Header.Get("Grpc-Status")+res.Trailer.Get("Grpc-Status"), "deadline_exceeded")
			}
		})
	}
}
