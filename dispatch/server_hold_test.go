package dispatch_test

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
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

// writeCounter counts the writes made on a connection.
type writeCounter struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// heldServer serves Gen.Add, and Gen.Wait, which returns when release
// closes, over tcp sockets whose server ends count their writes; it
// returns a socket dialled to it and the count.
func heldServer(t *testing.T, release <-chan struct{}) (transport.Socket, *atomic.Int64) {
	var writes atomic.Int64
	tr := &conntest.Transport{
		Name:   "tcp, server writes counted",
		Client: func(ctx context.Context, c net.Conn) (transport.Socket, error) { return tcp.NewSocket(ctx, c) },
		Server: func(ctx context.Context, c net.Conn) (transport.Socket, error) {
			return tcp.NewSocket(ctx, writeCounter{c, &writes})
		},
	}
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Gen.Add", func(_ context.Context, a *Args, r *int) error { *r = a.A + a.B; return nil }))
	require.NoError(t, dispatch.Handle(srv, "Gen.Wait", func(_ context.Context, a *Args, r *int) error { <-release; *r = a.A; return nil }))
	addr := serve(t, srv, tr, "127.0.0.1:0")
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	t.Cleanup(func() { sock.Close() })
	// A minute: for a broken server to fail the test rather than hang it.
	require.NoError(t, sock.SetReadDeadline(time.Now().Add(time.Minute)))
	return sock, &writes
}

// sendTogether sends the requests for methods, Seq 0 on, in one write.
func sendTogether(t *testing.T, sock transport.Socket, methods ...string) {
	batch := sock.(transport.BatchSender)
	flush := false
	for i, name := range methods {
		body, err := codec.Msgpack.Marshal(Args{i, 1})
		require.NoError(t, err)
		f, err := batch.Queue(&transport.Message{Header: map[string]string{"Service-Method": name, "Seq": strconv.Itoa(i)}, Body: body})
		require.NoError(t, err)
		flush = flush || f
	}
	require.True(t, flush)
	require.NoError(t, batch.Flush(context.Background()))
}

// recvReply reads a reply and returns its Seq and result.
func recvReply(t *testing.T, sock transport.Socket) (seq, r int) {
	var m transport.Message
	require.NoError(t, sock.Recv(&m))
	require.Empty(t, m.Header["Error"])
	seq, err := strconv.Atoi(m.Header["Seq"])
	require.NoError(t, err)
	require.NoError(t, codec.Msgpack.Unmarshal(m.Body, &r))
	return seq, r
}

// Requests that arrive together, each run in turn on the goroutine that
// read them, have their replies written together: a few writes for 40
// replies, where each reply was a write of its own.
//
// Each reply is checked by its Seq, not by its place: a call that runs
// for sweep.QuietAfter (1 ms) has the quiet sweep hand reading on, so
// that the calls behind it run meanwhile and their replies go first and
// apart — as they must behind a slow handler, and as they do behind a
// fast one whose goroutine a busy machine did not run for a millisecond
// (.ci/run --stress). So the batch is sent again, up to 50 times, until
// one shares its writes; one that never does fails the test.
func TestRepliesToRequestsArrivedTogetherShareWrites(t *testing.T) {
	sock, writes := heldServer(t, nil)
	const n = 40
	methods := make([]string, n)
	for i := range methods {
		methods[i] = "Gen.Add"
	}
	fewest := int64(-1)
	for range 50 {
		before := writes.Load()
		sendTogether(t, sock, methods...)
		seen := make(map[int]bool, n)
		for range n {
			seq, r := recvReply(t, sock)
			require.False(t, seen[seq], "a second reply to Seq %d", seq)
			seen[seq] = true
			require.Equal(t, seq+1, r, "the reply to Seq %d", seq)
		}
		require.Len(t, seen, n)
		if w := writes.Load() - before; fewest < 0 || w < fewest {
			fewest = w
		}
		if fewest <= n/4 {
			break
		}
	}
	assert.LessOrEqual(t, fewest, int64(n/4), "writes for %d replies (the fewest of the batches sent)", n)
}

// A reply held back for the next request's is not held back by a call
// that does not return: it is written while that call still runs.
func TestHeldReplyNotHeldBySlowCall(t *testing.T) {
	release := make(chan struct{})
	sock, _ := heldServer(t, release)
	sendTogether(t, sock, "Gen.Add", "Gen.Wait")
	seq, r := recvReply(t, sock)
	assert.Equal(t, 0, seq, "the call before the one that waits is answered")
	assert.Equal(t, 1, r)
	close(release)
	seq, r = recvReply(t, sock)
	assert.Equal(t, 1, seq)
	assert.Equal(t, 1, r)
}
