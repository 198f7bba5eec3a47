package frame

import (
	"bytes"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// joinConn is a connection that is a JoinedWriter: it records every write
// it is given, and whether it came as one joined write.
type joinConn struct {
	net.Conn // nil: only Write and WriteJoined are called
	mu       sync.Mutex
	writes   [][]byte
	joined   []bool
}

func (c *joinConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, bytes.Clone(b))
	c.joined = append(c.joined, false)
	return len(b), nil
}

func (c *joinConn) WriteJoined(head, body []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, append(bytes.Clone(head), body...))
	c.joined = append(c.joined, true)
	return len(head) + len(body), nil
}

// TestSendJoinsLargeBody: over a JoinedWriter, a frame whose body is too
// large to copy into the write buffer goes as one WriteJoined of head and
// body (one yamux frame on a mux stream), not as the two writes
// net.Buffers makes; a small one still goes as one plain write. Either way
// the bytes are the frame's.
func TestSendJoinsLargeBody(t *testing.T) {
	for name, size := range map[string]int{"large": copyLimit + 1, "small": 100} {
		t.Run(name, func(t *testing.T) {
			c := &joinConn{}
			s := &Socket{conn: c, max: 1 << 20, r: &Reader{max: 1 << 20}}
			s.q.init()
			m := &transport.Message{Header: map[string]string{"k": "v"}, Body: bytes.Repeat([]byte{7}, size)}
			require.NoError(t, s.Send(m))
			require.Len(t, c.writes, 1, "one write")
			assert.Equal(t, size > copyLimit, c.joined[0], "joined")
			got, err := read(c.writes[0], 1<<20)
			require.NoError(t, err)
			assert.Equal(t, m.Header, got.Header)
			assert.Equal(t, m.Body, got.Body)
		})
	}
}
