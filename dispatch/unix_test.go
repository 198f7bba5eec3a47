package dispatch_test

import (
	"context"
	"net/rpc"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/gobrpc"
	"github.com/zerodial/transport/internal/unixsock"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// unixAddr returns a unix address ("unix:PATH", docs/unix.md) whose "*"
// makes Listen pick a free path, in a short-named directory removed when
// t ends (a socket path has at most 107 bytes; t.TempDir's can be longer).
func unixAddr(t testing.TB) string {
	dir, err := os.MkdirTemp("", "zd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return "unix:" + filepath.Join(dir, "d*.sock")
}

// unixKinds are the transports that run over unix sockets.
var unixKinds = []struct {
	name string
	mk   func(t testing.TB, fb *fallback.Listener) transport.Transport
}{
	{"tcp", func(t testing.TB, fb *fallback.Listener) transport.Transport {
		tr := tcp.New(tcp.WithFallback(fb))
		t.Cleanup(func() { tr.Close() })
		return tr
	}},
	{"mux", func(t testing.TB, fb *fallback.Listener) transport.Transport {
		tr := mux.New(mux.WithFallback(fb))
		t.Cleanup(func() { tr.Close() })
		return tr
	}},
}

// credSeen is what a handler saw of its caller.
type credSeen struct {
	Path, Local, Remote, Network string
	HasCred                      bool
	UID, GID, PID                int
}

func credServer(t testing.TB) *dispatch.Server {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Cred.Get", func(ctx context.Context, _ *struct{}, reply *credSeen) error {
		ci, _ := dispatch.CallInfoFrom(ctx)
		*reply = credSeen{Path: string(ci.Path), Local: ci.LocalAddr.String(), Remote: ci.RemoteAddr.String(),
			Network: ci.RemoteAddr.Network(), HasCred: ci.PeerCred != nil}
		if ci.PeerCred != nil {
			reply.UID, reply.GID, reply.PID = ci.PeerCred.UID, ci.PeerCred.GID, ci.PeerCred.PID
		}
		return nil
	}))
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestCallInfoPeerCred: over a unix socket, on tcp and mux, a handler
// reads its caller's uid, gid and pid in CallInfo (Linux, macOS, FreeBSD), and the
// addresses in the form dialled; over TCP and on the shortcut, no
// credentials.
func TestCallInfoPeerCred(t *testing.T) {
	for _, k := range unixKinds {
		t.Run(k.name, func(t *testing.T) {
			srv := credServer(t)
			tr := k.mk(t, nil)
			addr := serve(t, srv, tr, unixAddr(t))
			require.True(t, strings.HasPrefix(addr, "unix:/"), addr)
			c, err := dispatch.Dial(t.Context(), tr, addr)
			require.NoError(t, err)
			defer c.Close()
			var got credSeen
			require.NoError(t, c.Call(t.Context(), "Cred.Get", struct{}{}, &got))
			want := credSeen{Path: k.name, Local: addr, Remote: "unix:", Network: "unix"}
			if unixsock.CredSupported {
				want.HasCred, want.UID, want.GID, want.PID = true, os.Getuid(), os.Getgid(), os.Getpid()
			}
			assert.Equal(t, want, got)

			// The shortcut to the same listener: the process itself, no
			// credentials (CallInfo's doc).
			sc, err := dispatch.Dial(t.Context(), tr, addr, dispatch.WithShortcut(dispatch.ShortcutCopy))
			require.NoError(t, err)
			defer sc.Close()
			require.NoError(t, sc.Call(t.Context(), "Cred.Get", struct{}{}, &got))
			assert.Equal(t, string(dispatch.PathShortcutCopy), got.Path)
			assert.False(t, got.HasCred, "no credentials on the shortcut")

			tcpAddr := serve(t, srv, tr, "127.0.0.1:0")
			tc, err := dispatch.Dial(t.Context(), tr, tcpAddr)
			require.NoError(t, err)
			defer tc.Close()
			require.NoError(t, tc.Call(t.Context(), "Cred.Get", struct{}{}, &got))
			assert.False(t, got.HasCred, "no credentials over TCP")
		})
	}
}

// TestUnixOnePort: a unix listener with a fallback serves zerodial's
// Client and net/rpc's own client (rpc.Dial("unix", path)) on one socket.
func TestUnixOnePort(t *testing.T) {
	for _, k := range unixKinds {
		t.Run(k.name, func(t *testing.T) {
			fb, err := fallback.New()
			require.NoError(t, err)
			srv := dispatch.NewServer()
			require.NoError(t, srv.RegisterName("Arith", newArith()))
			tr := k.mk(t, fb)
			l, err := tr.Listen(unixAddr(t))
			require.NoError(t, err)
			require.NoError(t, srv.Start(l))
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					c, err := fb.Accept()
					if err != nil {
						return
					}
					if fallback.KindOf(c) != fallback.Gob {
						c.Close()
						continue
					}
					wg.Go(func() { srv.ServeCodec(gobrpc.NewServerCodec(c)) })
				}
			})
			defer func() {
				srv.Close()
				l.Close()
				fb.Close()
				wg.Wait()
			}()
			addr := l.Addr().String()
			path := strings.TrimPrefix(addr, "unix:")

			std, err := rpc.Dial("unix", path)
			require.NoError(t, err)
			defer std.Close()
			checkMultiply(t, "net/rpc over unix", func(a Args, n *int) error { return std.Call("Arith.Multiply", a, n) }, 6)

			zc, err := dispatch.Dial(t.Context(), tr, addr)
			require.NoError(t, err)
			defer zc.Close()
			checkMultiply(t, "zerodial over unix", func(a Args, n *int) error {
				return zc.Call(t.Context(), "Arith.Multiply", a, n)
			}, 5)
		})
	}
}

// TestUnixReplicas: a Client's replicas may mix unix and TCP addresses,
// from a static target, and each is called.
func TestUnixReplicas(t *testing.T) {
	for _, k := range unixKinds {
		t.Run(k.name, func(t *testing.T) {
			tr := k.mk(t, nil)
			unixA := serve(t, whoServer(t, "unix-a"), tr, unixAddr(t))
			unixB := serve(t, whoServer(t, "unix-b"), tr, unixAddr(t))
			tcpC := serve(t, whoServer(t, "tcp-c"), tr, "127.0.0.1:0")
			target := "static:///" + strings.Join([]string{unixA, tcpC, unixB}, ",")
			c, err := dispatch.Dial(t.Context(), tr, target, dispatch.WithResolver(resolver.Default))
			require.NoError(t, err)
			defer c.Close()
			seen := map[string]int{}
			for range 9 {
				name, err := who(c)
				require.NoError(t, err)
				seen[name]++
			}
			assert.Equal(t, map[string]int{"unix-a": 3, "unix-b": 3, "tcp-c": 3}, seen, "round-robin over the three")
			var addrs []string
			for _, r := range c.Replicas() {
				addrs = append(addrs, r.Addr)
			}
			assert.ElementsMatch(t, []string{unixA, unixB, tcpC}, addrs)
		})
	}
}
