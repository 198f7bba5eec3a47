package frame

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// Buffered says whether the next frame has arrived whole: not before any
// of it has, nor while only part of it has; yes for the second of two
// frames read in one go, and no again once it has been taken.
func TestBufferedWholeFrameOnly(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	s := NewSocket(a, 1<<20)
	defer s.Close()
	assert.False(t, s.Buffered(), "nothing has arrived")

	two := append(append([]byte{}, frameHi...), frameHi...)
	go func() { _, _ = b.Write(two) }()
	var m transport.Message
	require.NoError(t, s.Recv(&m)) // the pipe delivers both in one read
	assert.True(t, s.Buffered(), "the second frame came with the first")
	require.NoError(t, s.Recv(&m))
	assert.False(t, s.Buffered(), "both taken")

	go func() { _, _ = b.Write(append(append([]byte{}, frameHi...), frameHi[:len(frameHi)-1]...)) }()
	require.NoError(t, s.Recv(&m))
	assert.False(t, s.Buffered(), "the second frame lacks its last byte")
	go func() { _, _ = b.Write(frameHi[len(frameHi)-1:]) }()
	require.NoError(t, s.Recv(&m))
	assert.Equal(t, "hi", string(m.Body))
}

// Buffered does not wait for a Recv under way, which may wait for the
// peer for ever: it reports false.
func TestBufferedDuringRecv(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	s := NewSocket(a, 1<<20)
	defer s.Close()
	errc := recvAsync(s)
	_, err := b.Write(frameHi[:3]) // the Recv has begun, and waits for the rest
	require.NoError(t, err)
	assert.False(t, s.Buffered())
	_, err = b.Write(frameHi[3:])
	require.NoError(t, err)
	require.NoError(t, <-errc)
}
