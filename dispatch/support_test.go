package dispatch_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// Helpers shared by interop_test.go, shutdown_test.go, registry_test.go,
// client_test.go and edges_test.go.

// waitLong bounds every wait for something that must happen; waitShort is
// how long a test watches for something that must not happen.
const (
	waitLong  = 20 * time.Second
	waitShort = 100 * time.Millisecond
)

// recv returns the next value from ch, failing the test if none arrives
// within d.
func recv[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
	var zero T
	return zero
}

// quiet asserts that nothing arrives on ch for waitShort.
func quiet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s happened too early: %v", what, v)
	case <-time.After(waitShort):
	}
}

// callAsync runs c.Call in a goroutine and delivers its error.
func callAsync(c *dispatch.Client, ctx context.Context, method string, args, reply any) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, method, args, reply) }()
	return errc
}

// isConnFailure reports whether err is a failure of the connection rather
// than an answer from a server: an error that is not a *dispatch.Error.
func isConnFailure(err error) bool {
	var de *dispatch.Error
	return err != nil && !errors.As(err, &de)
}

// codeOf returns err's dispatch Code, or "<not *dispatch.Error>".
func codeOf(err error) dispatch.Code {
	var de *dispatch.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return "<not *dispatch.Error>"
}

// overPath matches the words that open a Client's own failure, and the
// end of its context, for a call: "Service.Method over path: ".
var overPath = regexp.MustCompile(`^(\S+) over (memory|tcp|mux|shortcut-copy|shortcut-direct|netrpc|unix): `)

// pathless returns s with the path its opening words name as "<path>",
// which parity tables compare across paths.
func pathless(s string) string { return overPath.ReplaceAllString(s, "$1 over <path>: ") }

// assertClosed asserts that err is what a call of method on a closed
// Client fails with: ErrShutdown, named for the call.
func assertClosed(t *testing.T, method string, err error) {
	t.Helper()
	assert.ErrorIs(t, err, dispatch.ErrShutdown)
	if assert.Error(t, err) {
		assert.Equal(t, method+" over <path>: connection is shut down", pathless(err.Error()))
	}
}

func isShortcut(p path) bool { return strings.HasPrefix(p.name, "shortcut") }

// holder is a method ("Hold.Wait") that holds its call until released or
// until its context ends, and reports which.
type holder struct {
	started chan struct{}
	release chan struct{}
	ended   chan error // nil when released, else the context's error
	once    sync.Once
}

func newHolder(t *testing.T, srv *dispatch.Server) *holder {
	h := &holder{started: make(chan struct{}, 64), release: make(chan struct{}), ended: make(chan error, 64)}
	require.NoError(t, dispatch.Handle(srv, "Hold.Wait", h.handle))
	// Registered after the server and the client: runs before their
	// cleanups, so a held handler never outlives the test.
	t.Cleanup(h.free)
	return h
}

func (h *holder) handle(ctx context.Context, args *int, reply *int) error {
	h.started <- struct{}{}
	select {
	case <-h.release:
		h.ended <- nil
		*reply = *args
		return nil
	case <-ctx.Done():
		h.ended <- ctx.Err()
		return ctx.Err()
	}
}

func (h *holder) free() { h.once.Do(func() { close(h.release) }) }

// transports are the three network transports, each made fresh, and tcp
// and mux again over a unix socket (docs/unix.md), whose listeners each
// take a free name in unixDir.
var transports = []struct {
	name   string
	listen string
	make   func(t *testing.T) transport.Transport
}{
	{"memory", "", func(t *testing.T) transport.Transport { return memory.New() }},
	{"tcp", "127.0.0.1:0", func(t *testing.T) transport.Transport { return tcp.New() }},
	{"mux", "127.0.0.1:0", newMuxTransport},
	{"tcp-unix", "unix:" + filepath.Join(unixDir, "t*.sock"), func(t *testing.T) transport.Transport { return tcp.New() }},
	{"mux-unix", "unix:" + filepath.Join(unixDir, "m*.sock"), newMuxTransport},
}

// newMuxTransport is a mux Transport closed when t ends.
func newMuxTransport(t *testing.T) transport.Transport {
	tr := mux.New()
	t.Cleanup(func() { tr.Close() })
	return tr
}

// trackedTransport counts Dials and keeps every socket it dialled, so a
// test can check that each was closed.
type trackedTransport struct {
	transport.Transport
	dials atomic.Int32
	mu    sync.Mutex
	socks []*trackedSocket
}

type trackedSocket struct {
	transport.Socket
	closed     atomic.Bool
	recvFailed chan struct{} // closed when a Recv first fails
	failOnce   sync.Once
}

func (s *trackedSocket) Close() error {
	s.closed.Store(true)
	return s.Socket.Close()
}

func (s *trackedSocket) Recv(m *transport.Message) error {
	err := s.Socket.Recv(m)
	if err != nil {
		s.failOnce.Do(func() { close(s.recvFailed) })
	}
	return err
}

func (tt *trackedTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	tt.dials.Add(1)
	s, err := tt.Transport.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	ts := &trackedSocket{Socket: s, recvFailed: make(chan struct{})}
	tt.mu.Lock()
	tt.socks = append(tt.socks, ts)
	tt.mu.Unlock()
	return ts, nil
}

func (tt *trackedTransport) sockets() []*trackedSocket {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]*trackedSocket(nil), tt.socks...)
}

// spacedCounter is a countingTransport over a transport with an address
// space of its own (memory): it keeps the space, so the shortcut still
// finds the transport's servers, and counts Dials.
type spacedCounter struct {
	countingTransport
}

func (s *spacedCounter) AddrSpace() any {
	return s.Transport.(transport.AddrSpacer).AddrSpace()
}

func countMemory(tr *memory.Transport) *spacedCounter {
	return &spacedCounter{countingTransport{Transport: tr}}
}

// lingeringListener is a Listener whose pending Accept, once the listener
// is closed, returns only when hold is closed: the window between a
// listener's Close and its accept loop noticing, held open. It passes on
// the inner listener's transport.ClosedReporter.
type lingeringListener struct {
	transport.Listener
	hold chan struct{}
}

func (l *lingeringListener) Closed() bool {
	cr, ok := l.Listener.(transport.ClosedReporter)
	return ok && cr.Closed()
}

// Wire passes on what the inner listener speaks, as a wrapper should.
func (l *lingeringListener) Wire() transport.Wire {
	if wr, ok := l.Listener.(transport.WireReporter); ok {
		return wr.Wire()
	}
	return transport.Wire{}
}

func (l *lingeringListener) Accept() (transport.Socket, error) {
	s, err := l.Listener.Accept()
	if err != nil {
		<-l.hold
	}
	return s, err
}

// whoServer returns a Server with one method, "Who.Am", that answers name.
func whoServer(t *testing.T, name string) *dispatch.Server {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Who.Am", func(ctx context.Context, _ *struct{}, reply *string) error {
		*reply = name
		return nil
	}))
	t.Cleanup(func() { srv.Close() })
	return srv
}

func who(c *dispatch.Client) (string, error) {
	var s string
	err := c.Call(context.Background(), "Who.Am", nil, &s)
	return s, err
}

// freeAddr returns a loopback TCP address nobody listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func intPtr(v int) *int { return &v }
