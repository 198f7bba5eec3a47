package dispatch_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/conntest"
	"github.com/zerodial/transport/tcp"
)

// What a stream's handler has not yet consumed counts in its connection's
// byte budget (WithMaxBytesPerConn), and the budget holds: a message that
// takes the connection past it ends its stream with CodeResourceExhausted,
// as a call past it is refused, instead of letting many streams each hold
// a window's worth. The other streams and calls of the connection go on.
// The network paths only: the budget is a network connection's, and the
// shortcut has none.
func TestStreamBytesPerConnAreBounded(t *testing.T) {
	const (
		budget = 100_000
		msg    = 1000
		msgs   = 60 // 60,000 bytes a stream: one fits the budget, two do not
	)
	for _, p := range pathNames[:3] {
		t.Run(string(p), func(t *testing.T) {
			srv := dispatch.NewServer(dispatch.WithMaxBytesPerConn(budget), dispatch.WithStreamWindow(64<<10))
			release := make(chan struct{})
			// Hold reads nothing until released, then counts the bytes it
			// was sent.
			require.NoError(t, dispatch.HandleStream(srv, "B.Hold", func(ctx context.Context, s *dispatch.ServerStream[[]byte, int]) error {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				n := 0
				for m, err := range s.Recv() {
					if err != nil {
						return err
					}
					n += len(*m)
				}
				return s.Send(&n)
			}))
			require.NoError(t, dispatch.Handle(srv, "B.Echo", func(ctx context.Context, args *int, reply *int) error {
				*reply = *args
				return nil
			}))
			c, _ := dialPath(t, p, srv)
			// A bound on the test, should the stream never end: not a
			// measure of speed.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			fill := func(s *dispatch.Stream[[]byte, int]) error {
				b := make([]byte, msg)
				for range msgs {
					if err := s.Send(&b); err != nil {
						return err
					}
				}
				return s.CloseSend()
			}

			first, err := dispatch.OpenStream[[]byte, int](ctx, c, "B.Hold")
			require.NoError(t, err)
			defer first.Close()
			require.NoError(t, fill(first), "60,000 bytes are within the budget")

			second, err := dispatch.OpenStream[[]byte, int](ctx, c, "B.Hold")
			require.NoError(t, err)
			defer second.Close()
			exhausted := &dispatch.Error{Code: dispatch.CodeResourceExhausted, Message: "dispatch: too many bytes in flight on this connection (limit 100000)"}
			if err := fill(second); err != nil { // the end may have arrived before the last Send
				assert.Equal(t, exhausted, err)
			}
			got, err := collect(second.Recv())
			assert.Empty(t, got)
			assert.Equal(t, exhausted, err, "the stream that took the connection past its budget ends")

			// The connection goes on: calls, and streams within the budget.
			var n int
			require.NoError(t, c.Call(ctx, "B.Echo", 5, &n))
			assert.Equal(t, 5, n)
			close(release)
			got, err = collect(first.Recv())
			require.NoError(t, err)
			assert.Equal(t, []int{msgs * msg}, got, "the first stream got all it was sent")
			got, err = collect(dispatch.CallStream[[]byte, int](ctx, c, "B.Hold", &[]byte{1, 2, 3}))
			require.NoError(t, err)
			assert.Equal(t, []int{3}, got)
		})
	}
}

// A stream's inbox is measured against WithMaxBytesPerConn as a call's
// admission is, with what the socket holds unwritten: a peer that reads
// nothing while a stream's handler sends to it cannot make the server hold
// the budget in its socket's queue and the budget again in another
// stream's inbox. Over tcp with small socket buffers, so that what the
// handler sends stays in the socket's queue (Unwritten) rather than the
// kernel's.
func TestStreamInboxCountsUnwritten(t *testing.T) {
	const (
		budget = 512 << 10
		sent   = 1 << 20 // what Flood sends the peer, all of it unwritten
		inbox  = 64 << 10
	)
	small := func(ctx context.Context, c net.Conn) (transport.Socket, error) {
		tc := c.(*net.TCPConn)
		tc.SetReadBuffer(4096)
		tc.SetWriteBuffer(4096)
		return tcp.NewSocket(ctx, c)
	}
	tr := conntest.Transport{Name: "tcp small buffers", Client: small, Server: small}
	srv := dispatch.NewServer(dispatch.WithMaxBytesPerConn(budget), dispatch.WithStreamWindow(256<<10),
		dispatch.WithReplyTimeout(time.Minute))
	flooded := make(chan struct{})
	require.NoError(t, dispatch.HandleStream(srv, "B.Flood", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
		b := make([]byte, 64<<10)
		for range sent / len(b) {
			if err := s.Send(&b); err != nil {
				return err
			}
		}
		close(flooded)
		<-ctx.Done()
		return ctx.Err()
	}))
	ended := make(chan struct{})
	require.NoError(t, dispatch.HandleStream(srv, "B.Hold", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
		<-ctx.Done() // reads nothing: what it is sent waits in its inbox
		close(ended)
		return ctx.Err()
	}))
	addr := serve(t, srv, tr, "127.0.0.1:0")
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	defer sock.Close()
	send := func(h map[string]string, body []byte) {
		t.Helper()
		require.NoError(t, sock.Send(&transport.Message{Header: h, Body: body}))
	}
	// Hold opens first, so that its window goes out while the socket can
	// still write. The peer grants Flood all it sends, and reads nothing.
	send(map[string]string{"Service-Method": "B.Hold", "Seq": "1", "Stream": "open", "Window": "65536"}, nil)
	send(map[string]string{"Service-Method": "B.Flood", "Seq": "3", "Stream": "open", "Window": strconv.Itoa(2 * sent)}, nil)
	recv(t, flooded, waitLong, "Flood to send what the peer will not read")
	// Hold's inbox alone stays well within the budget; with the socket's
	// queue it is over.
	for range 4 {
		send(map[string]string{"Seq": "1", "Stream": "msg"}, make([]byte, inbox/4))
	}
	recv(t, ended, waitLong, "the stream whose inbox took the connection past its budget to end")
}
