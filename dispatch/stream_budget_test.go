package dispatch_test

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
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
	tr := &conntest.Transport{Name: "tcp small buffers", Client: small, Server: small}
	srv := dispatch.NewServer(dispatch.WithMaxBytesPerConn(budget), dispatch.WithStreamWindow(256<<10),
		dispatch.WithReplyTimeout(time.Minute))
	flooded := make(chan struct{})
	require.NoError(t, dispatch.HandleStream(srv, "B.Flood", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
		// Incompressible, so that compression does not shrink what the
		// socket holds unwritten.
		b := make([]byte, 64<<10)
		rand.NewChaCha8([32]byte{}).Read(b)
		for range sent / len(b) {
			if err := s.Send(&b); err != nil {
				return err
			}
		}
		close(flooded)
		<-ctx.Done()
		return ctx.Err()
	}))
	ended, holding := make(chan struct{}), make(chan struct{})
	require.NoError(t, dispatch.HandleStream(srv, "B.Hold", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
		close(holding)
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
	// Hold opens first, and its handler has started before Flood opens:
	// it starts once its window, the first frame of its stream, is
	// written, and the goroutine that writes the window may be kept
	// writing, as the socket queue's writer, what Flood sends after it
	// (on a busy machine, Flood's handler can send all it sends before
	// Hold's goroutine comes to write). The peer grants Flood all it
	// sends, and reads nothing.
	send(map[string]string{"Service-Method": "B.Hold", "Seq": "1", "Stream": "open", "Window": "65536"}, nil)
	recv(t, holding, waitLong, "Hold's handler to start")
	send(map[string]string{"Service-Method": "B.Flood", "Seq": "3", "Stream": "open", "Window": strconv.Itoa(2 * sent)}, nil)
	recv(t, flooded, waitLong, "Flood to send what the peer will not read")
	// Hold's inbox alone stays well within the budget; with the socket's
	// queue it is over.
	for range 4 {
		send(map[string]string{"Seq": "1", "Stream": "msg"}, make([]byte, inbox/4))
	}
	recv(t, ended, waitLong, "the stream whose inbox took the connection past its budget to end")
}

// An open frame with a body (WIRE.md says it has none; the body is
// ignored) counts in the connection's byte budget while its stream is open,
// and no longer once it has ended: a peer that opens such streams one after
// the other does not raise the connection's count for good, to be refused
// calls within the budget later. With one stream kept open, so that
// admission checks the count (one call is always admitted).
func TestStreamOpenBodyLeavesTheBudget(t *testing.T) {
	const budget = 100_000
	srv := dispatch.NewServer(dispatch.WithMaxBytesPerConn(budget))
	require.NoError(t, dispatch.HandleStream(srv, "B.Hold", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
		<-ctx.Done()
		return ctx.Err()
	}))
	require.NoError(t, dispatch.HandleStream(srv, "B.Done", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "B.Len", func(ctx context.Context, args *[]byte, reply *int) error {
		*reply = len(*args)
		return nil
	}))
	sock := fuzzServe(t, srv)
	send := func(h map[string]string, body []byte) {
		require.NoError(t, sock.Send(&transport.Message{Header: h, Body: body}))
	}
	// until reads the frames the server sends until the one of seq that ok
	// accepts, and returns it.
	until := func(seq string, ok func(transport.Message) bool) transport.Message {
		for {
			var m transport.Message
			require.NoError(t, sock.Recv(&m))
			if m.Header["Seq"] == seq && ok(m) {
				return m
			}
		}
	}
	send(map[string]string{"Service-Method": "B.Hold", "Seq": "1", "Stream": "open"}, nil)
	junk := make([]byte, 60_000)
	for i := range 3 { // 180,000 bytes of open bodies in all: over the budget unless released
		seq := strconv.Itoa(10 + i)
		send(map[string]string{"Service-Method": "B.Done", "Seq": seq, "Stream": "open"}, junk)
		until(seq, func(m transport.Message) bool { return m.Header["Stream"] == "end" })
	}
	args, err := codec.Msgpack.Marshal(make([]byte, 50_000))
	require.NoError(t, err)
	send(map[string]string{"Service-Method": "B.Len", "Seq": "99"}, args)
	m := until("99", func(transport.Message) bool { return true })
	assert.Empty(t, m.Header["Error"], "a call within the budget after the streams ended: %v", m.Header)
	var n int
	require.NoError(t, codec.Msgpack.Unmarshal(m.Body, &n))
	assert.Equal(t, 50_000, n)
}
