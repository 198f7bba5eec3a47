package unixsock_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/internal/unixsock"
)

// shortDir returns a directory with a short path, removed when t ends:
// a socket path may have 108 bytes at most, which t.TempDir's can pass.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "zd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// deadSocketFile leaves a socket file at path with no listener behind it,
// as a process that died without closing its listener does.
func deadSocketFile(t *testing.T, path string) {
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	ul.SetUnlinkOnClose(false)
	require.NoError(t, ul.Close())
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket, fi.Mode().Type())
}

// serveOK writes "ok" to every connection l accepts, until l is closed;
// the returned channel is closed then.
func serveOK(l net.Listener) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
	return done
}

// dialRead dials path and returns what it reads, within a hang guard.
func dialRead(t *testing.T, path string) string {
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	b := make([]byte, 2)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err)
	return string(b)
}

func TestListenReplacesDeadFile(t *testing.T) {
	path := filepath.Join(shortDir(t), "dead.sock")
	deadSocketFile(t, path)

	l, err := unixsock.Listen(path)
	require.NoError(t, err, "a dead listener's file is replaced")
	done := serveOK(l)
	assert.Equal(t, "ok", dialRead(t, path), "the new listener serves the path")
	require.NoError(t, l.Close())
	<-done
	_, err = os.Lstat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "Close removes the file")
}

func TestListenRefusesLiveListener(t *testing.T) {
	path := filepath.Join(shortDir(t), "live.sock")
	live, err := unixsock.Listen(path)
	require.NoError(t, err)
	done := serveOK(live)
	defer func() { live.Close(); <-done }()

	_, err = unixsock.Listen(path)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EADDRINUSE)
	assert.Contains(t, err.Error(), "a live listener accepts connections there")
	assert.Contains(t, err.Error(), path)

	// The live listener still serves: its file was left alone.
	assert.Equal(t, "ok", dialRead(t, path))
}

// A live listener of another program (not this package's) is refused too.
func TestListenRefusesForeignLiveListener(t *testing.T) {
	path := filepath.Join(shortDir(t), "other.sock")
	other, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer other.Close()
	_, err = unixsock.Listen(path)
	assert.ErrorIs(t, err, syscall.EADDRINUSE)
	assert.Contains(t, err.Error(), "live listener")
}

func TestListenLeavesOtherFiles(t *testing.T) {
	path := filepath.Join(shortDir(t), "file.sock")
	require.NoError(t, os.WriteFile(path, []byte("data"), 0o600))
	_, err := unixsock.Listen(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a socket")
	b, err := os.ReadFile(path)
	require.NoError(t, err, "the file is still there")
	assert.Equal(t, "data", string(b))
}

// Close removes the file only while it is its own: a listener that
// replaced it keeps its file.
func TestCloseLeavesReplacement(t *testing.T) {
	path := filepath.Join(shortDir(t), "r.sock")
	first, err := unixsock.Listen(path)
	require.NoError(t, err)
	require.NoError(t, os.Remove(path)) // as another process might
	second, err := unixsock.Listen(path)
	require.NoError(t, err)
	done := serveOK(second)
	defer func() { second.Close(); <-done }()
	require.NoError(t, first.Close())
	_, err = os.Lstat(path)
	require.NoError(t, err, "the first listener's Close left the second's file")
	assert.Equal(t, "ok", dialRead(t, path))
}

func TestListenPattern(t *testing.T) {
	dir := shortDir(t)
	a, err := unixsock.Listen(filepath.Join(dir, "p*.sock"))
	require.NoError(t, err)
	defer a.Close()
	b, err := unixsock.Listen(filepath.Join(dir, "p*.sock"))
	require.NoError(t, err)
	defer b.Close()
	pa, pb := a.Addr().String(), b.Addr().String()
	assert.NotEqual(t, pa, pb)
	for _, p := range []string{pa, pb} {
		assert.True(t, strings.HasPrefix(p, "unix:"+dir+"/p"), p)
		assert.True(t, strings.HasSuffix(p, ".sock"), p)
		assert.NotContains(t, p, "*")
	}
	assert.Equal(t, "unix", a.Addr().Network())
}

func TestDialAbsent(t *testing.T) {
	path := filepath.Join(shortDir(t), "none.sock")
	_, err := unixsock.Dial(context.Background(), (&net.Dialer{}).DialContext, path)
	assert.True(t, unixsock.Absent(err), "%v", err)
	deadSocketFile(t, path)
	_, err = unixsock.Dial(context.Background(), (&net.Dialer{}).DialContext, path)
	assert.True(t, unixsock.Absent(err), "%v", err)
}

func TestPath(t *testing.T) {
	for addr, want := range map[string]string{
		"unix:/run/a.sock": "/run/a.sock",
		"unix:rel.sock":    "rel.sock",
		"unix:./7000":      "./7000",
		"unix:@abstract":   "@abstract",
	} {
		p, ok := unixsock.Path(addr)
		assert.True(t, ok, addr)
		assert.Equal(t, want, p, addr)
	}
	for _, addr := range []string{"unix:", "unix:7000", "127.0.0.1:7000", "/run/a.sock", "UNIX:/a", "localhost:0"} {
		_, ok := unixsock.Path(addr)
		assert.False(t, ok, addr)
	}
}

func TestPathTooLong(t *testing.T) {
	path := filepath.Join(shortDir(t), strings.Repeat("a", 200)+".sock")
	_, err := unixsock.Listen(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a unix socket path has at most")
	_, err = unixsock.Dial(context.Background(), (&net.Dialer{}).DialContext, path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a unix socket path has at most")
}
