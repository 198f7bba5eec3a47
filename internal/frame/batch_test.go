package frame

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

var _ transport.BatchSender = (*Socket)(nil)

// sendBatched sends m the way dispatch does through a BatchSender: Queue,
// then Flush when Queue made the caller the writer.
func sendBatched(ctx context.Context, s *Socket, m *transport.Message) error {
	flush, err := s.Queue(m)
	if err != nil || !flush {
		return err
	}
	return s.Flush(ctx)
}

// Messages queued from many goroutines, mixed with Send and SendAsync,
// arrive whole and in each goroutine's order, in fewer writes than
// messages; m may be reused as soon as Queue returns; a message over the
// limit fails Queue at once and the socket goes on.
func TestBatchOrderAndCoalescing(t *testing.T) {
	sa, conn, sb := socketPair(t)
	const senders, each = 8, 2000
	got := make(chan map[string][]string, 1)
	go func() {
		seen := map[string][]string{}
		var m transport.Message
		for range senders*each + 1 {
			if err := sb.Recv(&m); err != nil {
				break
			}
			seen[m.Header["from"]] = append(seen[m.Header["from"]], string(m.Body))
		}
		got <- seen
	}()
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			from := fmt.Sprint(g)
			m := &transport.Message{Header: map[string]string{"from": from}}
			for i := range each {
				m.Body = append(m.Body[:0], fmt.Sprint(i)...)
				var err error
				switch (g + i) % 5 {
				case 0:
					err = sa.Send(m)
				case 1:
					err = sa.SendAsync(m)
				default:
					err = sendBatched(context.Background(), sa, m)
				}
				if !assert.NoError(t, err) {
					return
				}
				// Reused at once: Queue took a copy.
				m.Body = append(m.Body[:0], "garbage"...)
			}
		})
	}
	wg.Wait()
	_, err := sa.Queue(&transport.Message{Body: make([]byte, 2<<20)})
	require.ErrorIs(t, err, transport.ErrFrameTooLarge)
	require.NoError(t, sendBatched(context.Background(), sa, &transport.Message{Header: map[string]string{"from": "end"}}))

	seen := <-got
	for g := range senders {
		list := seen[fmt.Sprint(g)]
		require.Len(t, list, each, "sender %d", g)
		for i, b := range list {
			require.Equal(t, fmt.Sprint(i), b, "sender %d, message %d", g, i)
		}
	}
	require.Len(t, seen["end"], 1, "the socket went on after the refused message")
	conn.mu.Lock()
	writes := conn.writes
	conn.mu.Unlock()
	t.Logf("%d messages in %d writes", senders*each, writes)
	assert.Less(t, writes, senders*each, "no two messages shared a write")
}

// A Flush whose context ends while the peer reads nothing returns with
// ErrTimeout, and closes the socket: the batch may hold others' messages.
// Meanwhile Queue stops taking messages once maxQueued bytes wait, rather
// than holding all a sender sends.
//
// The peer is a pipe's end that never reads, so the Flush's write blocks
// for good — a fact, not a guess from how long a Flush took: over tcp a
// Flush slow only because the machine was loaded looked blocked, finished,
// and failed the test (.ci/run --stress).
func TestBatchFlushInterruptedAndBounded(t *testing.T) {
	a, b := net.Pipe()
	writing := make(chan struct{})
	sa := NewSocket(&writeStarted{Conn: a, started: writing}, 1<<20)
	t.Cleanup(func() { sa.Close(); b.Close() })
	big := &transport.Message{Body: make([]byte, 64<<10)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	flush, err := sa.Queue(big)
	require.NoError(t, err)
	require.True(t, flush, "no write is under way")
	flushed := make(chan error, 1)
	go func() { flushed <- sa.Flush(ctx) }()
	recvWithin(t, writing, "the Flush's write")

	// A second sender queues behind the blocked writer, up to the bound.
	queued := make(chan int, 1)
	go func() {
		n := 0
		for {
			flush, err := sa.Queue(&transport.Message{Body: make([]byte, 16<<10)})
			if err != nil || flush {
				break
			}
			n++
		}
		queued <- n
	}()
	// Once maxQueued bytes wait behind the batch being written, the sender
	// is held in Queue; then the Flush's context ends.
	writtenBatch := int64(len(big.Body) + PrefixLen)
	require.Eventually(t, func() bool { return sa.Unwritten() >= writtenBatch+maxQueued },
		10*time.Second, time.Millisecond, "the second sender filled the queue")
	cancel()

	select {
	case err := <-flushed:
		require.ErrorIs(t, err, transport.ErrTimeout)
	case <-time.After(10 * time.Second):
		t.Fatal("Flush did not return when its context ended")
	}
	n := <-queued
	assert.LessOrEqual(t, n*(16<<10+PrefixLen), maxQueued+(16<<10+PrefixLen), "Queue held more than maxQueued behind a blocked write")
	_, err = sa.Queue(&transport.Message{Body: []byte("late")})
	require.Error(t, err, "the interrupted batch closed the socket")
	assert.False(t, strings.Contains(err.Error(), "use of closed"), "the cause is reported: %v", err)
}

// writeStarted closes started when its first Write begins.
type writeStarted struct {
	net.Conn
	once    sync.Once
	started chan struct{}
}

func (c *writeStarted) Write(b []byte) (int, error) {
	c.once.Do(func() { close(c.started) })
	return c.Conn.Write(b)
}

// recvWithin waits for ch to close, failing the test after 10 s.
func recvWithin(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Senders that wait for their own writes (Send's) behind a write that
// cannot finish copy no more than maxQueued and one frame into the queue,
// however many they are; what the socket holds unwritten is counted
// (Unwritten), and given back when the write fails and the queue is
// dropped. Before the bound every waiting Send left a copy of its frame
// in the queue.
func TestSendBoundedBehindBlockedWrite(t *testing.T) {
	// A pipe has no buffer: a write waits for the peer to read it, and the
	// peer never reads, so the first write blocks for good — a fact, not a
	// guess from how long a Send took (over tcp, a slow Send that filled
	// the kernel's buffers looked blocked).
	a, b := net.Pipe()
	sa := NewSocket(a, 1<<20)
	t.Cleanup(func() { sa.Close(); b.Close() })
	big := &transport.Message{Body: make([]byte, 64<<10)}
	frame := int64(len(big.Body) + PrefixLen)

	// The write that cannot finish: whichever Send claims the socket first
	// writes its own frame, which the socket does not copy.
	blocked := make(chan error, 1)
	go func() { blocked <- sa.Send(big) }()
	const senders = 40
	errs := make(chan error, senders)
	for range senders {
		go func() { errs <- sa.Send(big) }()
	}
	// Let every sender queue what it will.
	last := int64(-1)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		n := sa.Unwritten()
		if n == last && n > 0 {
			break
		}
		last = n
	}
	assert.Positive(t, last, "the queued frames are counted")
	assert.LessOrEqual(t, last, maxQueued+frame, "Send copied more than maxQueued and one frame behind a blocked write (%d senders)", senders)

	sa.Close()
	require.Error(t, <-blocked)
	for range senders {
		require.Error(t, <-errs, "a Send behind the failed write fails with it")
	}
	assert.Zero(t, sa.Unwritten(), "what was queued is dropped with the socket")
}

// WaitWritten returns only once the frames queued behind a write under way
// have been written: while the peer reads nothing it waits (until its ctx
// ends, and the frames stay queued), and once the peer reads, it returns
// nil with every frame delivered. A write that fails meanwhile is its
// error. Close drops what is queued; this is what an owner waits for first.
func TestWaitWrittenQueuedBehindWrite(t *testing.T) {
	a, b := net.Pipe() // no buffer: a write waits until the peer reads
	sa, sb := NewSocket(a, 1<<20), NewSocket(b, 1<<20)
	t.Cleanup(func() { sa.Close(); sb.Close() })
	require.NoError(t, sa.WaitWritten(context.Background()), "nothing taken: nothing to wait for")

	require.NoError(t, sa.SendAsync(&transport.Message{Header: map[string]string{"n": "1"}}))
	flush, err := sa.Queue(&transport.Message{Header: map[string]string{"n": "2"}})
	require.NoError(t, err)
	require.False(t, flush, "the second frame waits behind the first's write")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, sa.WaitWritten(ctx), context.DeadlineExceeded, "the peer has read nothing")
	assert.Positive(t, sa.Unwritten(), "still queued, not dropped")

	got := make(chan []string, 1)
	go func() {
		var ns []string
		var m transport.Message
		for range 2 {
			if sb.Recv(&m) != nil {
				break
			}
			ns = append(ns, m.Header["n"])
		}
		got <- ns
	}()
	require.NoError(t, sa.WaitWritten(context.Background()))
	assert.Zero(t, sa.Unwritten())
	assert.Equal(t, []string{"1", "2"}, <-got)

	// A write that fails ends the wait with its error.
	require.NoError(t, sa.SendAsync(&transport.Message{Header: map[string]string{"n": "3"}}))
	done := make(chan error, 1)
	go func() { done <- sa.WaitWritten(context.Background()) }()
	sb.Close()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("WaitWritten did not return when the write failed")
	}
}
