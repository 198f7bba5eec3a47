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
