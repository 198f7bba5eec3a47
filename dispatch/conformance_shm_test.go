//go:build linux

package dispatch_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
	"github.com/zerodial/transport/shm"
	"github.com/zerodial/transport/tcp"
)

// shmLimit is shm's option for a frame limit a case asks for.
func shmLimit(n int) []shm.Option {
	if n == 0 {
		return nil
	}
	return []shm.Option{shm.WithMaxFrameSize(n)}
}

// unixPattern returns a unix address whose "*" picks a socket file of its
// own, in a short-named directory removed when t ends.
func unixPattern(t *testing.T) string {
	dir, err := os.MkdirTemp("", "zd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return "unix:" + filepath.Join(dir, "s*.sock")
}

// shmBinding is the shm transport's path: both ends in this process, the
// messages through the shared rings as between two.
var shmBinding = dispatchtest.Binding{
	Profile: dispatchtest.SHM,
	Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
		st, ct := shm.New(shmLimit(l.Server)...), shm.New(shmLimit(l.Client)...)
		t.Cleanup(func() { ct.Close() })
		return dialed(t, srv, st, ct, unixPattern(t))
	},
	// A tcp listener on a unix socket, dialled over shm.
	OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
		other := tcp.New()
		l, err := other.Listen(unixPattern(t))
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		t.Cleanup(func() { l.Close() })
		ct := shm.New()
		defer ct.Close()
		c, err := dispatch.Dial(t.Context(), ct, l.Addr().String())
		if c != nil {
			c.Close()
		}
		return err
	},
}

// TestConformanceSHM runs the suite over the shm transport.
func TestConformanceSHM(t *testing.T) { dispatchtest.Run(t, shmBinding) }
