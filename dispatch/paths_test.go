package dispatch_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// countingTransport counts Dials, so a test can prove the shortcut opened
// no socket.
type countingTransport struct {
	transport.Transport
	dials atomic.Int32
}

func (c *countingTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	c.dials.Add(1)
	return c.Transport.Dial(ctx, addr)
}

// env is one path, set up: a server with the test service and a client.
type env struct {
	client *dispatch.Client
	arith  *Arith
	rec    *recorder
	limit  int
	server *dispatch.Server
	addr   string
	tr     transport.Transport
}

type path struct {
	name  string
	setup func(t testing.TB, o ...setupOption) *env
}

var paths = []path{
	{"memory", func(t testing.TB, o ...setupOption) *env { return network(t, memory.New(), "", o...) }},
	{"tcp", func(t testing.TB, o ...setupOption) *env { return network(t, tcp.New(), "127.0.0.1:0", o...) }},
	{"mux", func(t testing.TB, o ...setupOption) *env {
		tr := mux.New()
		t.Cleanup(func() { tr.Close() })
		return network(t, tr, "127.0.0.1:0", o...)
	}},
	{"shortcut-copy", func(t testing.TB, o ...setupOption) *env { return shortcut(t, dispatch.ShortcutCopy, o...) }},
	{"shortcut-direct", func(t testing.TB, o ...setupOption) *env { return shortcut(t, dispatch.ShortcutDirect, o...) }},
}

// setupOption varies a path's setup.
type setupOption int

// noInterceptors leaves the recording interceptors out, for benchmarks.
const noInterceptors setupOption = 1

func newServer(t testing.TB, o ...setupOption) (*dispatch.Server, *Arith, *recorder) {
	rec := new(recorder)
	var opts []dispatch.ServerOption
	if !slices.Contains(o, noInterceptors) {
		opts = append(opts, dispatch.WithInterceptors(rec.interceptor("outer"), rec.interceptor("inner")))
	}
	srv := dispatch.NewServer(opts...)
	arith := newArith()
	require.NoError(t, srv.Register(arith))
	require.NoError(t, dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A + args.B
		return nil
	}))
	return srv, arith, rec
}

// serve starts srv on a new listener of tr and returns its address.
func serve(t testing.TB, srv *dispatch.Server, tr transport.Transport, addr string) string {
	l, err := tr.Listen(addr)
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func network(t testing.TB, tr transport.Transport, listen string, o ...setupOption) *env {
	srv, arith, rec := newServer(t, o...)
	addr := serve(t, srv, tr, listen)
	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &env{client: c, arith: arith, rec: rec, limit: tr.(transport.FrameLimiter).MaxFrameSize(), server: srv, addr: addr, tr: tr}
}

func shortcut(t testing.TB, mode dispatch.ShortcutMode, o ...setupOption) *env {
	srv, arith, rec := newServer(t, o...)
	tr := &countingTransport{Transport: tcp.New()}
	addr := serve(t, srv, tr, "127.0.0.1:0")
	c, err := dispatch.Dial(context.Background(), tr, addr, dispatch.WithShortcut(mode))
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		require.Zero(t, tr.dials.Load(), "the shortcut dialled a socket")
	})
	return &env{client: c, arith: arith, rec: rec, limit: transport.DefaultMaxFrameSize, server: srv, addr: addr, tr: tr}
}
