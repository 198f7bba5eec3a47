//go:build unix

package netconn

import (
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTune: TCP_NODELAY is set even where something turned it off.
func TestTune(t *testing.T) {
	c, _ := tcpPair(t)
	tc := c.(*net.TCPConn)
	require.NoError(t, tc.SetNoDelay(false))
	require.False(t, noDelay(t, tc))
	Tune(c)
	assert.True(t, noDelay(t, tc))
}

func noDelay(t *testing.T, c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var v int
	var serr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		v, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
	}))
	require.NoError(t, serr)
	return v != 0
}
