package transport_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/internal/unixsock"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// unixListenAddr returns a unix address whose "*" makes every Listen pick
// a socket file of its own, in a directory removed when t ends. The
// directory is short-named, in the system's temporary directory: t.TempDir's
// name, made of the test's, can pass the 108 bytes a socket path may have.
func unixListenAddr(t *testing.T) string {
	dir, err := os.MkdirTemp("", "zd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return "unix:" + filepath.Join(dir, "s*.sock")
}

// TestConformanceUnix runs the suite over unix sockets, on tcp and mux.
func TestConformanceUnix(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			return tcp.New(), unixListenAddr(t)
		}, tcpAbilities)
	})
	t.Run("mux", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			return mux.New(), unixListenAddr(t)
		}, muxAbilities)
	})
}

// unixTransports are the transports that run over unix sockets, each made
// with opts' TLS configuration when it is not nil.
func unixTransports() map[string]func(cfg *tls.Config) transport.Transport {
	return map[string]func(cfg *tls.Config) transport.Transport{
		"tcp": func(cfg *tls.Config) transport.Transport { return tcp.New(tcp.WithTLS(cfg)) },
		"mux": func(cfg *tls.Config) transport.Transport { return mux.New(mux.WithTLS(cfg)) },
	}
}

// pair dials l with tr and returns both ends, closed when t ends.
func pair(t *testing.T, tr transport.Transport, l transport.Listener) (client, server transport.Socket) {
	t.Helper()
	type accepted struct {
		s   transport.Socket
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		s, err := l.Accept()
		ch <- accepted{s, err}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := tr.Dial(ctx, l.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	a := <-ch
	require.NoError(t, a.err)
	t.Cleanup(func() { a.s.Close() })
	require.NoError(t, c.Send(&transport.Message{Body: []byte("ping")}))
	var m transport.Message
	require.NoError(t, a.s.Recv(&m))
	require.Equal(t, "ping", string(m.Body))
	return c, a.s
}

// TestUnixStaleFile: Listen on a path whose socket file a dead listener
// left behind replaces it; Listen on a path a live listener owns fails and
// says so; Close removes the file.
func TestUnixStaleFile(t *testing.T) {
	for name, mk := range unixTransports() {
		t.Run(name, func(t *testing.T) {
			tr := mk(nil)
			defer tr.Close()
			dir, err := os.MkdirTemp("", "zd")
			require.NoError(t, err)
			defer os.RemoveAll(dir)
			path := filepath.Join(dir, "stale.sock")
			// A listener whose process died leaves its file.
			ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			require.NoError(t, err)
			ul.SetUnlinkOnClose(false)
			ul.Close()

			l, err := tr.Listen("unix:" + path)
			require.NoError(t, err, "a dead listener's file is replaced")
			assert.Equal(t, "unix:"+path, l.Addr().String())
			assert.Equal(t, "unix", l.Addr().Network())
			pair(t, tr, l)

			_, err = tr.Listen("unix:" + path)
			require.Error(t, err, "a live listener's path is refused")
			assert.ErrorIs(t, err, syscall.EADDRINUSE)
			assert.Contains(t, err.Error(), "a live listener accepts connections there")
			pair(t, tr, l) // and the live listener serves on

			require.NoError(t, l.Close())
			_, err = os.Lstat(path)
			assert.ErrorIs(t, err, os.ErrNotExist, "Close removes the file")
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			fresh := mk(nil) // mux's would open a stream on its session
			defer fresh.Close()
			_, err = fresh.Dial(ctx, "unix:"+path)
			assert.ErrorIs(t, err, transport.ErrConnectionRefused)
		})
	}
}

// TestUnixTLS: TLS runs over a unix socket when the client's configuration
// names the server; without a name, Dial says it needs one.
func TestUnixTLS(t *testing.T) {
	serverCfg, clientCfg := testcert.Configs(t)
	for name, mk := range unixTransports() {
		t.Run(name, func(t *testing.T) {
			srv := mk(serverCfg)
			defer srv.Close()
			l, err := srv.Listen(unixListenAddr(t))
			require.NoError(t, err)
			defer l.Close()

			unnamed := mk(clientCfg)
			defer unnamed.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err = unnamed.Dial(ctx, l.Addr().String())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "a unix address names no server: set the tls.Config's ServerName")

			named := clientCfg.Clone()
			named.ServerName = "127.0.0.1" // the test certificate's
			tr := mk(named)
			defer tr.Close()
			c, s := pair(t, tr, l)
			for _, sock := range []transport.Socket{c, s} {
				_, ok := sock.(transport.TLSReporter).TLS()
				assert.True(t, ok, "TLS state")
			}
			if unixsock.CredSupported {
				cred, ok := s.(transport.PeerCredReporter).PeerCred()
				require.True(t, ok, "credentials over TLS")
				assert.Equal(t, os.Getpid(), cred.PID)
			}
		})
	}
}

// TestUnixPeerCred: each end of a unix socket reports the other's
// credentials (Linux, macOS, FreeBSD); over TCP, none.
func TestUnixPeerCred(t *testing.T) {
	for name, mk := range unixTransports() {
		t.Run(name, func(t *testing.T) {
			tr := mk(nil)
			defer tr.Close()
			l, err := tr.Listen(unixListenAddr(t))
			require.NoError(t, err)
			defer l.Close()
			c, s := pair(t, tr, l)
			for end, sock := range map[string]transport.Socket{"client": c, "server": s} {
				cred, ok := sock.(transport.PeerCredReporter).PeerCred()
				if !unixsock.CredSupported {
					assert.False(t, ok, "%s: only Linux, macOS and FreeBSD report credentials so far", end)
					continue
				}
				require.True(t, ok, end)
				assert.Equal(t, transport.PeerCred{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getpid()}, cred, end)
			}

			ltcp, err := tr.Listen("127.0.0.1:0")
			require.NoError(t, err)
			defer ltcp.Close()
			c, s = pair(t, tr, ltcp)
			for _, sock := range []transport.Socket{c, s} {
				_, ok := sock.(transport.PeerCredReporter).PeerCred()
				assert.False(t, ok, "no credentials over TCP")
			}
		})
	}
}

// TestUnixBackAmbiguous: mux.Back over a unix listener reaches its one
// client, and refuses, naming why, once two unnamed clients share "unix:".
func TestUnixBackAmbiguous(t *testing.T) {
	tr := mux.New()
	defer tr.Close()
	l, err := tr.Listen(unixListenAddr(t))
	require.NoError(t, err)
	defer l.Close()
	back, err := mux.Back(l)
	require.NoError(t, err)
	defer back.Close()
	_, s := pair(t, tr, l)
	remote := s.RemoteAddr().String()
	assert.Equal(t, "unix:", remote)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	b, err := back.Dial(ctx, remote)
	require.NoError(t, err, "one client: Back reaches it")
	b.Close()

	other := mux.New()
	defer other.Close()
	pair(t, other, l)
	_, err = back.Dial(ctx, remote)
	require.ErrorIs(t, err, transport.ErrConnectionRefused)
	assert.Contains(t, err.Error(), "2 sessions come from that address")
}

// TestUnixAbstract: on Linux, "unix:@name" is a socket of the abstract
// namespace, with no file, served and dialled as a path is.
func TestUnixAbstract(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the abstract namespace is Linux's")
	}
	for name, mk := range unixTransports() {
		t.Run(name, func(t *testing.T) {
			tr := mk(nil)
			defer tr.Close()
			addr := fmt.Sprintf("unix:@zerodial-test-%d-%s", os.Getpid(), name)
			l, err := tr.Listen(addr)
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, addr, l.Addr().String())
			c, s := pair(t, tr, l)
			cred, ok := s.(transport.PeerCredReporter).PeerCred()
			require.True(t, ok)
			assert.Equal(t, os.Getpid(), cred.PID)
			_, ok = c.(transport.PeerCredReporter).PeerCred()
			assert.True(t, ok)
		})
	}
}
