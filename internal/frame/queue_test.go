package frame

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// countingConn counts the writes made to it.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// socketPair returns two Sockets over the ends of a TCP connection on
// loopback, the first counting its writes.
func socketPair(t *testing.T) (*Socket, *countingConn, *Socket) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	b := <-accepted
	require.NotNil(t, b)
	cc := &countingConn{Conn: a}
	sa, sb := NewSocket(cc, 1<<20), NewSocket(b, 1<<20)
	t.Cleanup(func() { sa.Close(); sb.Close() })
	return sa, cc, sb
}

// Messages sent with Send and SendAsync from many goroutines arrive whole,
// each goroutine's in the order it sent them; a run of SendAsync calls
// goes out in far fewer writes than messages; a message over the limit
// fails at once and the socket goes on.
func TestSendQueueOrderAndCoalescing(t *testing.T) {
	sa, conn, sb := socketPair(t)
	const senders, each = 8, 2000
	got := make(chan map[string][]int, 1)
	go func() {
		seen := map[string][]int{}
		var m transport.Message
		for range senders * each {
			if err := sb.Recv(&m); err != nil {
				break
			}
			var n int
			fmt.Sscan(string(m.Body), &n)
			seen[m.Header["from"]] = append(seen[m.Header["from"]], n)
		}
		got <- seen
	}()
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			from := fmt.Sprint(g)
			for i := range each {
				m := &transport.Message{Header: map[string]string{"from": from}, Body: []byte(fmt.Sprint(i))}
				var err error
				if (g+i)%3 == 0 {
					err = sa.Send(m)
				} else {
					err = sa.SendAsync(m)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := <-got
	for g := range senders {
		want := make([]int, each)
		for i := range want {
			want[i] = i
		}
		assert.Equal(t, want, seen[fmt.Sprint(g)], "sender %d", g)
	}
	conn.mu.Lock()
	writes := conn.writes
	conn.mu.Unlock()
	assert.Less(t, writes, senders*each/2, "writes were coalesced")

	err := sa.SendAsync(&transport.Message{Body: make([]byte, 2<<20)})
	assert.ErrorIs(t, err, transport.ErrFrameTooLarge)
	require.NoError(t, sa.SendAsync(&transport.Message{Body: []byte("after")}))
	var m transport.Message
	require.NoError(t, sb.Recv(&m))
	assert.Equal(t, "after", string(m.Body))
}

// A queued write that fails closes the socket: later sends fail, and Recv
// reports the write's error rather than a bare "closed".
func TestSendQueueFailureClosesSocket(t *testing.T) {
	sa, conn, sb := socketPair(t)
	sb.Close()
	conn.Conn.(*net.TCPConn).SetLinger(0)
	var err error
	for range 10000 {
		if err = sa.SendAsync(&transport.Message{Body: make([]byte, 1024)}); err != nil {
			break
		}
	}
	require.Error(t, err, "sending to a closed peer never failed")
	assert.Error(t, sa.Send(&transport.Message{}))
	var m transport.Message
	rerr := sa.Recv(&m)
	assert.ErrorIs(t, rerr, io.ErrClosedPipe, "the write's error: %v", rerr)
	assert.NotErrorIs(t, rerr, transport.ErrClosed)
}
