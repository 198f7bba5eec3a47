package dispatch_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// pathNames are the five paths, by the name CallInfo gives each.
var pathNames = []dispatch.Path{"memory", "tcp", "mux", dispatch.PathShortcutCopy, dispatch.PathShortcutDirect}

// dialPath serves srv on a new listener of path p's transport and returns
// a Client of it that takes p, made with opts, and the listener's address.
func dialPath(t testing.TB, p dispatch.Path, srv *dispatch.Server, opts ...dispatch.ClientOption) (*dispatch.Client, string) {
	var tr transport.Transport
	listen := "127.0.0.1:0"
	switch p {
	case "memory":
		tr, listen = memory.New(), ""
	case "mux":
		m := mux.New()
		t.Cleanup(func() { m.Close() })
		tr = m
	case dispatch.PathShortcutCopy:
		tr = tcp.New()
		opts = append(opts, dispatch.WithShortcut(dispatch.ShortcutCopy))
	case dispatch.PathShortcutDirect:
		tr = tcp.New()
		opts = append(opts, dispatch.WithShortcut(dispatch.ShortcutDirect))
	default:
		tr = tcp.New()
	}
	addr := serve(t, srv, tr, listen)
	c, err := dispatch.Dial(context.Background(), tr, addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, addr
}

// infoSeen is what a handler saw of its call.
type infoSeen struct {
	Method, Path, Local, Remote, RemoteNetwork string
	TLS                                        bool
	Meta                                       string
}

func seen(ctx context.Context) infoSeen {
	ci, ok := dispatch.CallInfoFrom(ctx)
	if !ok {
		return infoSeen{Method: "<no CallInfo>"}
	}
	s := infoSeen{Method: ci.Method, Path: string(ci.Path), TLS: ci.TLS != nil, Meta: dispatch.MetadataFrom(ctx)["trace"]}
	if ci.LocalAddr != nil {
		s.Local = ci.LocalAddr.String()
	}
	if ci.RemoteAddr != nil {
		s.Remote, s.RemoteNetwork = ci.RemoteAddr.String(), ci.RemoteAddr.Network()
	}
	return s
}

// The handler, the Server's interceptors and the Client's interceptors all
// learn the method and the path of a call from its context, on every path;
// a handler of a shortcut call sees the process as its peer (ShortcutAddr)
// and the listener's address as its own. Client interceptors run in order
// around the call, and what they put in the context (metadata) reaches the
// handler.
func TestCallInfo(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			var mu sync.Mutex
			var order []string
			var serverSaw infoSeen
			srv := dispatch.NewServer(dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
				mu.Lock()
				serverSaw = seen(ctx)
				mu.Unlock()
				return next(ctx, args, reply)
			}))
			require.NoError(t, dispatch.Handle(srv, "Info.Get", func(ctx context.Context, _ *struct{}, reply *infoSeen) error {
				*reply = seen(ctx)
				return nil
			}, dispatch.Borrows()))
			client := func(name string) dispatch.Interceptor {
				return func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
					before, _ := dispatch.CallInfoFrom(ctx)
					mu.Lock()
					order = append(order, name+" in "+string(before.Path))
					mu.Unlock()
					err := next(dispatch.WithMetadata(ctx, dispatch.Metadata{"trace": name}), args, reply)
					after, _ := dispatch.CallInfoFrom(ctx)
					mu.Lock()
					order = append(order, name+" out "+string(after.Path)+" "+after.Method)
					mu.Unlock()
					return err
				}
			}
			c, addr := dialPath(t, p, srv, dispatch.WithInterceptors(client("a"), client("b")))

			var got infoSeen
			require.NoError(t, c.Call(context.Background(), "Info.Get", struct{}{}, &got))
			assert.Equal(t, "Info.Get", got.Method)
			assert.Equal(t, string(p), got.Path)
			assert.Equal(t, addr, got.Local, "the handler's own address")
			if p.IsShortcut() {
				assert.Equal(t, "shortcut", got.Remote)
				assert.Equal(t, "shortcut", got.RemoteNetwork)
			} else {
				assert.NotEmpty(t, got.Remote)
				assert.NotEqual(t, "shortcut", got.RemoteNetwork)
			}
			assert.False(t, got.TLS)
			assert.Equal(t, "b", got.Meta, "metadata from the innermost client interceptor")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, got, serverSaw, "the server's interceptor and the handler see the same")
			assert.Equal(t, []string{
				"a in " + string(p), "b in " + string(p),
				"b out " + string(p) + " Info.Get", "a out " + string(p) + " Info.Get",
			}, order)
		})
	}
}

// A Client's CallInfo names the address it dials, on its transport, and no
// handler's: a context that is not a call's has no CallInfo.
func TestCallInfoOfClient(t *testing.T) {
	srv := whoServer(t, "x")
	var got dispatch.CallInfo
	c, addr := dialPath(t, "tcp", srv, dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		got, _ = dispatch.CallInfoFrom(ctx)
		return next(ctx, args, reply)
	}))
	_, err := who(c)
	require.NoError(t, err)
	assert.Equal(t, "Who.Am", got.Method)
	assert.Equal(t, dispatch.Path("tcp"), got.Path)
	require.NotNil(t, got.RemoteAddr)
	assert.Equal(t, addr, got.RemoteAddr.String())
	assert.Equal(t, "tcp", got.RemoteAddr.Network())
	assert.Nil(t, got.LocalAddr)
	assert.Nil(t, got.TLS)

	_, ok := dispatch.CallInfoFrom(context.Background())
	assert.False(t, ok)
}

// Over TLS a handler sees the connection's state, and with it the client's
// verified certificate, to authorise by.
func TestCallInfoTLS(t *testing.T) {
	serverCfg, clientCfg, err := testcert.Make(true)
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		server transport.Transport
		client transport.Transport
	}{
		{"tcp", tcp.New(tcp.WithTLS(serverCfg)), tcp.New(tcp.WithTLS(clientCfg))},
		{"mux", mux.New(mux.WithTLS(serverCfg)), mux.New(mux.WithTLS(clientCfg))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, tr := range []transport.Transport{tc.server, tc.client} {
				if m, ok := tr.(*mux.Transport); ok {
					t.Cleanup(func() { m.Close() })
				}
			}
			srv := dispatch.NewServer()
			require.NoError(t, dispatch.Handle(srv, "Peer.Name", func(ctx context.Context, _ *struct{}, reply *string) error {
				ci, _ := dispatch.CallInfoFrom(ctx)
				if ci.TLS == nil {
					*reply = "<no TLS>"
				} else if len(ci.TLS.PeerCertificates) == 0 {
					*reply = "<no certificate>"
				} else {
					*reply = ci.TLS.PeerCertificates[0].Subject.CommonName
				}
				return nil
			}))
			addr := serve(t, srv, tc.server, "127.0.0.1:0")
			c, err := dispatch.Dial(context.Background(), tc.client, addr)
			require.NoError(t, err)
			defer c.Close()
			var name string
			require.NoError(t, c.Call(context.Background(), "Peer.Name", struct{}{}, &name))
			assert.Equal(t, "zerodial test", name, "the client certificate's name")
		})
	}
}
