package mux

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

// A stream hands a frame's head and large body to yamux in one write.
var _ frame.JoinedWriter = (*streamConn)(nil)

// TestJoinBuffers: join returns head then body; a released buffer is lent
// again for a frame it can hold, and one larger than maxPooledJoin is not
// kept.
func TestJoinBuffers(t *testing.T) {
	var j joinBuffers
	head, body := []byte("head"), bytes.Repeat([]byte{1}, 100)
	buf, release := j.join(head, body)
	assert.Equal(t, append(bytes.Clone(head), body...), buf)
	first := &buf[0]
	release()
	// sync.Pool may drop what it is given (it does under -race at random),
	// so reuse is checked only when the pool kept the buffer.
	if p, ok := j.pool.Get().(*[]byte); ok {
		assert.Zero(t, len(*p), "a released buffer is empty")
		assert.GreaterOrEqual(t, cap(*p), len(head)+len(body))
		assert.Same(t, first, &(*p)[:1][0], "the buffer released is the one lent")
		j.pool.Put(p)
	}
	buf, release = j.join(head, bytes.Repeat([]byte{2}, 200))
	assert.Equal(t, append(bytes.Clone(head), bytes.Repeat([]byte{2}, 200)...), buf, "a larger frame gets a buffer that fits")
	release()

	var big joinBuffers
	_, release = big.join(nil, make([]byte, maxPooledJoin+1))
	release()
	assert.Nil(t, big.pool.Get(), "a buffer over maxPooledJoin is not kept")
}

// TestLargeMessageJoined: messages with headers whose bodies are too large
// for the write buffer, one after another, arrive whole and in order over a
// stream (each head joined to its body).
func TestLargeMessageJoined(t *testing.T) {
	tr := newTransport(t)
	l := listen(t, tr)
	acc := acceptOne(l)
	c := dial(t, tr, l.Addr().String())
	s := await(t, acc, waitLong, "Accept")
	defer s.Close()
	sizes := []int{64 << 10, 1 << 20, 40 << 10, 2 << 20}
	errs := make(chan error, 1)
	go func() {
		for i, n := range sizes {
			m := &transport.Message{Header: map[string]string{"i": string(rune('a' + i))}, Body: bytes.Repeat([]byte{byte(i + 1)}, n)}
			if err := c.Send(m); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for i, n := range sizes {
		var m transport.Message
		require.NoError(t, s.Recv(&m))
		assert.Equal(t, string(rune('a'+i)), m.Header["i"])
		require.Len(t, m.Body, n)
		assert.Equal(t, bytes.Repeat([]byte{byte(i + 1)}, n), m.Body)
	}
	require.NoError(t, <-errs)
}
