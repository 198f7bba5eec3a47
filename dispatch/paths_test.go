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

// Wire passes on what the wrapped transport speaks, as a wrapper should.
func (c *countingTransport) Wire() transport.Wire {
	if wr, ok := c.Transport.(transport.WireReporter); ok {
		return wr.Wire()
	}
	return transport.Wire{}
}

// AddrSpace passes on the wrapped transport's address space, as a wrapper
// should: a memory transport's listeners are found in it.
func (c *countingTransport) AddrSpace() any {
	if as, ok := c.Transport.(transport.AddrSpacer); ok {
		return as.AddrSpace()
	}
	return nil
}

func (c *countingTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	c.dials.Add(1)
	return c.Transport.Dial(ctx, addr)
}

// env is one path, set up: a server with the test service and a client.
type env struct {
	client *dispatch.Client
	arith  *Arith
	keeper *Keeper
	// other returns a transport of this path's kind (counting no Dials of
	// the path's own) and the address of a listener serving the same
	// Server that speaks another protocol; nil for memory, which has one.
	other  func(t *testing.T) (transport.Transport, string)
	opts   []dispatch.ClientOption
	rec    *recorder
	limit  int
	server *dispatch.Server
	addr   string
	tr     transport.Transport
	// netrpc is the encoding of the netrpc path (ServeCodec and
	// DialCodec), nil on paths: it has no transport, no metadata, no
	// deadline reaching the handler, no streams.
	netrpc *netrpcCodec
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

const (
	// noInterceptors leaves the recording interceptors out, for benchmarks.
	noInterceptors setupOption = iota + 1
	// strictDecoding makes the Server WithStrictDecoding.
	strictDecoding
)

func newServer(t testing.TB, o ...setupOption) (*dispatch.Server, *Arith, *recorder) {
	srv, arith, _, rec := newServerKeeper(t, o...)
	return srv, arith, rec
}

// newServerKeeper is newServer, also returning the Keeper it serves.
func newServerKeeper(t testing.TB, o ...setupOption) (*dispatch.Server, *Arith, *Keeper, *recorder) {
	rec := new(recorder)
	var opts []dispatch.ServerOption
	if !slices.Contains(o, noInterceptors) {
		opts = append(opts, dispatch.WithInterceptors(rec.interceptor("outer"), rec.interceptor("inner")))
	}
	if slices.Contains(o, strictDecoding) {
		opts = append(opts, dispatch.WithStrictDecoding())
	}
	srv := dispatch.NewServer(opts...)
	arith := newArith()
	// Every Arith method borrows; Keeper's do not.
	require.NoError(t, srv.Register(arith, dispatch.Borrows()))
	keeper := newStateKeeper()
	require.NoError(t, srv.Register(keeper))
	require.NoError(t, dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A + args.B
		return nil
	}, dispatch.Borrows()))
	registerDetails(t, srv)
	return srv, arith, keeper, rec
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
	srv, arith, keeper, rec := newServerKeeper(t, o...)
	addr := serve(t, srv, tr, listen)
	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	e := &env{client: c, arith: arith, keeper: keeper, rec: rec, limit: tr.(transport.FrameLimiter).MaxFrameSize(), server: srv, addr: addr, tr: tr}
	switch tr.(type) {
	case *tcp.Transport:
		e.other = func(t *testing.T) (transport.Transport, string) { return tr, serveMux(t, srv) }
	case *mux.Transport:
		e.other = func(t *testing.T) (transport.Transport, string) { return tr, serveAlso(t, srv, tcp.New()) }
	}
	return e
}

// serveMux serves srv on a new mux listener as well, until the test ends,
// and returns its address.
func serveMux(t testing.TB, srv *dispatch.Server) string {
	tr := mux.New()
	t.Cleanup(func() { tr.Close() })
	return serveAlso(t, srv, tr)
}

// serveAlso serves srv on a new listener of tr as well, until the test
// ends (srv itself goes on), and returns its address.
func serveAlso(t testing.TB, srv *dispatch.Server, tr transport.Transport) string {
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

func shortcut(t testing.TB, mode dispatch.ShortcutMode, o ...setupOption) *env {
	srv, arith, keeper, rec := newServerKeeper(t, o...)
	tr := &countingTransport{Transport: tcp.New()}
	addr := serve(t, srv, tr, "127.0.0.1:0")
	opts := []dispatch.ClientOption{dispatch.WithShortcut(mode)}
	c, err := dispatch.Dial(context.Background(), tr, addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		require.Zero(t, tr.dials.Load(), "the shortcut dialled a socket")
	})
	return &env{client: c, arith: arith, keeper: keeper, rec: rec, limit: transport.DefaultMaxFrameSize, server: srv, addr: addr, tr: tr, opts: opts,
		other: func(t *testing.T) (transport.Transport, string) {
			return &countingTransport{Transport: tcp.New()}, serveMux(t, srv)
		}}
}
