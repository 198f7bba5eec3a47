package frame

import (
	"context"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// A Flush whose context ends while the peer is still taking its write is
// given InterruptGrace: a peer that reads within it gets the whole batch,
// and the socket goes on, its other senders' frames with it; a peer that
// does not read within it has the write interrupted and the socket
// closed, as before. In a synctest bubble, whose clock moves only when
// every goroutine waits, so that "within" is exact on a busy machine.
func TestFlushInterruptGrace(t *testing.T) {
	for _, c := range []struct {
		name      string
		readAfter time.Duration
		want      error
	}{
		{"the peer reads within the grace", InterruptGrace / 2, nil},
		{"the peer reads after it", 2 * InterruptGrace, transport.ErrTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := net.Pipe()
				sa := NewSocket(a, 1<<20)
				defer sa.Close()
				defer b.Close()
				msg := &transport.Message{Header: map[string]string{"k": "v"}, Body: make([]byte, 64<<10)}
				flush, err := sa.Queue(msg)
				require.NoError(t, err)
				require.True(t, flush)
				ctx, cancel := context.WithCancel(context.Background())
				flushed := make(chan error, 1)
				go func() { flushed <- sa.Flush(ctx) }()
				synctest.Wait() // the write is blocked: nobody reads the pipe
				cancel()
				read := make(chan int64, 1)
				go func() {
					time.Sleep(c.readAfter)
					n, _ := io.Copy(io.Discard, b)
					read <- n
				}()
				err = <-flushed
				if c.want == nil {
					require.NoError(t, err)
					_, err = sa.Queue(&transport.Message{Body: []byte("next")})
					assert.NoError(t, err, "the socket goes on")
				} else {
					require.ErrorIs(t, err, c.want)
					_, err = sa.Queue(&transport.Message{Body: []byte("next")})
					assert.Error(t, err, "the interrupted batch closed the socket")
				}
				sa.Close()
				b.Close()
				n := <-read
				if c.want == nil {
					assert.EqualValues(t, PrefixLen+4+64<<10, n, "the peer got the whole frame: its prefix, its header block of 4 bytes, its body")
				}
			})
		})
	}
}

// A Flush whose context ends writes on only the batch under way: once it
// is out, what other senders queued meanwhile goes on a goroutine of the
// socket's, under no deadline of the caller's, and Flush returns. Before,
// the caller went on draining them under its InterruptGrace deadline, and
// a peer that read steadily but not faster than a stream queued had the
// write cut at 100 ms and the socket closed under every sender.
func TestFlushHandsOnOthersFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe()
		sa := NewSocket(a, 1<<20)
		defer sa.Close()
		// The peer reads steadily: 8 KiB every 5 ms.
		readerDone := make(chan struct{})
		defer func() { b.Close(); <-readerDone }()
		go func() {
			defer close(readerDone)
			buf := make([]byte, 8<<10)
			for {
				time.Sleep(5 * time.Millisecond)
				if _, err := io.ReadFull(b, buf); err != nil {
					return
				}
			}
		}()
		flush, err := sa.Queue(&transport.Message{Body: make([]byte, 8<<10)})
		require.NoError(t, err)
		require.True(t, flush)
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		flushed := make(chan error, 1)
		go func() { flushed <- sa.Flush(ctx) }()
		// Another sender, a stream, queues 8 KiB every 4 ms for 300 ms.
		other := make(chan error, 1)
		go func() {
			for time.Since(start) < 300*time.Millisecond {
				if err := sa.SendAsync(&transport.Message{Body: make([]byte, 8<<10)}); err != nil {
					other <- err
					return
				}
				time.Sleep(4 * time.Millisecond)
			}
			other <- nil
		}()
		time.Sleep(time.Millisecond)
		cancel()
		require.NoError(t, <-flushed, "the caller's batch went out")
		assert.Less(t, time.Since(start), InterruptGrace, "Flush returned once its batch was out")
		assert.NoError(t, <-other, "the other sender's frames were written on")
		require.NoError(t, sa.WaitWritten(context.Background()))
	})
}
