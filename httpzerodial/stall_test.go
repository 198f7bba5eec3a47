package httpzerodial_test

import (
	"context"
	"fmt"
	"net"
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
