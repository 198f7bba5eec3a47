package grpczerodial_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/interop"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/shm"
	"github.com/zerodial/transport/tcp"
)

// path is one way a call goes: a transport, the address to listen on, and
// the Client's shortcut mode (none: the network); or HTTP, when http is
// not nil: the Server behind httpzerodial's Handler (h2c), the Client
// httpzerodial.Dial's with those options.
type path struct {
	name     string
	tr       func() transport.Transport
	addr     string
	shortcut *dispatch.ShortcutMode
	http     []httpzerodial.ClientOption
}

var (
	copyMode   = dispatch.ShortcutCopy
	directMode = dispatch.ShortcutDirect
)

var paths = []path{
	{"memory", func() transport.Transport { return memory.New() }, "", nil, nil},
	{"tcp", func() transport.Transport { return tcp.New() }, "127.0.0.1:0", nil, nil},
	{"mux", func() transport.Transport { return mux.New() }, "127.0.0.1:0", nil, nil},
	{"shortcut-copy", func() transport.Transport { return memory.New() }, "", &copyMode, nil},
	{"shortcut-direct", func() transport.Transport { return memory.New() }, "", &directMode, nil},
	{"tcp-unix", func() transport.Transport { return tcp.New() }, unixAddr, nil, nil},
	{name: "http-connect", http: []httpzerodial.ClientOption{}},
	{name: "http-grpc", http: []httpzerodial.ClientOption{httpzerodial.WithGRPC()}},
	{name: "http-grpcweb", http: []httpzerodial.ClientOption{httpzerodial.WithGRPCWeb()}},
}

// unixAddr is a unix socket's address whose "*" makes each Listen take a
// file of its own (docs/unix.md).
var unixAddr = "unix:" + filepath.Join(os.TempDir(), "zd-grpc-*.sock")

// shm's path joins the others where shared memory is served (Linux).
func init() {
	if runtime.GOOS == "linux" {
		paths = append(paths, path{"shm", func() transport.Transport { return shm.New() }, unixAddr, nil, nil})
	}
}

// pathNamed is the path of that name.
func pathNamed(t testing.TB, name string) path {
	for _, p := range paths {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no path %q", name)
	return path{}
}

// overHTTP reports whether p is one of HTTP's, whose differences the tests
// declare where they show:
//   - a failed call's header and trailer cross as one set (connect-go
//     merges an error's headers and trailers; a gRPC response with no
//     message is trailers-only): the ClientConn gives them all as its
//     header;
//   - a stream's trailers are its end's reply metadata, read as plain
//     keys (httpzerodial.Dial): a dispatch caller reads a gRPC trailer's
//     "key#t" as "key". The ClientConn, whose header has come in a frame
//     of its own by then, takes them for the trailer they are.
func (p path) overHTTP() bool { return p.http != nil }

// wantPath is the dispatch.Path a handler sees on p.
func (p path) want() dispatch.Path {
	switch p.name {
	case "shortcut-copy":
		return dispatch.PathShortcutCopy
	case "shortcut-direct":
		return dispatch.PathShortcutDirect
	case "tcp-unix":
		return dispatch.Path("tcp") // the transport's name, over a unix socket too
	}
	if p.http != nil {
		return dispatch.PathHTTP
	}
	return dispatch.Path(p.name)
}

// env is a path set up: a Server serving the Registrar's services, and a
// ClientConn calling it.
type env struct {
	srv *dispatch.Server
	reg *grpczerodial.Registrar
	c   *dispatch.Client
	cc  *grpczerodial.ClientConn
	// addr is the Server's listener's address, which the Client dials.
	addr string
}

type setup struct {
	srvOpts []dispatch.ServerOption
	regOpts []grpczerodial.ServerOption
	cOpts   []dispatch.ClientOption
	ccOpts  []grpczerodial.ClientOption
	// register registers services; by default, gRPC's interop TestService
	// and the health service.
	register func(reg *grpczerodial.Registrar)
	// methods, when not nil, registers methods of dispatch's own.
	methods func(srv *dispatch.Server)
}

func start(t testing.TB, p path, s setup) *env {
	t.Helper()
	srv := dispatch.NewServer(s.srvOpts...)
	reg := grpczerodial.NewRegistrar(srv, s.regOpts...)
	if s.methods != nil {
		s.methods(srv)
	}
	if s.register != nil {
		s.register(reg)
	} else {
		testpb.RegisterTestServiceServer(reg, interop.NewTestServer())
		healthpb.RegisterHealthServer(reg, health.NewServer())
	}
	if p.http != nil {
		return startHTTP(t, p, s, srv, reg)
	}
	tr := p.tr()
	l, err := tr.Listen(p.addr)
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	opts := s.cOpts
	if p.shortcut != nil {
		opts = append([]dispatch.ClientOption{dispatch.WithShortcut(*p.shortcut)}, opts...)
	}
	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		if cl, ok := tr.(interface{ Close() error }); ok {
			cl.Close()
		}
	})
	return &env{srv: srv, reg: reg, c: c, cc: grpczerodial.NewClientConn(c, s.ccOpts...), addr: l.Addr().String()}
}

// startHTTP serves srv through httpzerodial's Handler, over HTTP/1.1 and
// h2c, and dials it with httpzerodial.Dial.
func startHTTP(t testing.TB, p path, s setup, srv *dispatch.Server, reg *grpczerodial.Registrar) *env {
	t.Helper()
	ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
	ts.Config.Protocols = httpzerodial.Protocols()
	ts.Start()
	opts := append(slices.Clip(p.http), httpzerodial.WithDispatchOptions(s.cOpts...))
	c, err := httpzerodial.Dial(context.Background(), ts.URL, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		ts.Close()
		srv.Close()
	})
	return &env{srv: srv, reg: reg, c: c, cc: grpczerodial.NewClientConn(c, s.ccOpts...), addr: ts.URL}
}

// forEachPath runs f as a subtest on every path.
func forEachPath(t *testing.T, s setup, f func(t *testing.T, p path, e *env)) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			f(t, p, start(t, p, s))
		})
	}
}
