package dispatch_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
)

// Borrows with names marks exactly those methods; a name that is not a
// method being registered is an error, and nothing is registered.
func TestBorrowsNamesMethods(t *testing.T) {
	srv := dispatch.NewServer()
	err := srv.Register(newArith(), dispatch.Borrows("Multiply", "Nope"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Borrows names Nope, not a method of Arith")
	err = dispatch.Handle(srv, "Gen.Add", func(context.Context, *Args, *int) error { return nil }, dispatch.Borrows("Sub"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Borrows names Sub")
	assert.Error(t, srv.Register(newArith(), nil), "a nil option")

	// Only Multiply borrows: a direct caller lends its args to it alone.
	require.NoError(t, srv.Register(newArith(), dispatch.Borrows("Multiply")))
	lent := make(chan *Args, 2)
	require.NoError(t, srv.Register(&Probe{lent: lent}, dispatch.Borrows("Lend")))
	e := shortcutOn(t, srv, dispatch.ShortcutDirect)
	args := &Args{2, 3}
	require.NoError(t, e.Call(context.Background(), "Probe.Lend", args, new(int)))
	assert.Same(t, args, <-lent)
	require.NoError(t, e.Call(context.Background(), "Probe.Copy", args, new(int)))
	assert.NotSame(t, args, <-lent, "a method not named by Borrows got the caller's pointer")
}

// Probe reports the args pointer each method receives.
type Probe struct{ lent chan *Args }

func (p *Probe) Lend(args *Args, reply *int) error { p.lent <- args; return nil }
func (p *Probe) Copy(args *Args, reply *int) error { p.lent <- args; return nil }

// shortcutOn serves srv on a tcp listener and returns a shortcut Client of it
// in mode that never dials.
func shortcutOn(t *testing.T, srv *dispatch.Server, mode dispatch.ShortcutMode) *dispatch.Client {
	tr := &countingTransport{Transport: tcp.New()}
	addr := serve(t, srv, tr, "127.0.0.1:0")
	c, err := dispatch.Dial(context.Background(), tr, addr, dispatch.WithShortcut(mode))
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		assert.Zero(t, tr.dials.Load())
	})
	return c
}

// Opaque hides a slice in an unexported field, which neither the codec nor
// a deep copy by reflection can reach.
type Opaque struct {
	hidden []int //lint:ignore U1000 it is there to be unreachable
}

// Borrows refuses arguments that cannot be deep-copied: a direct call would
// lend them when its context cannot end and have to encode them (losing the
// hidden field) when it can, and the handler would see the difference.
func TestBorrowsRefusesUncopyableArgs(t *testing.T) {
	srv := dispatch.NewServer()
	fn := func(context.Context, *Opaque, *int) error { return nil }
	err := dispatch.Handle(srv, "Op.Do", fn, dispatch.Borrows())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dispatch: Borrows: the arguments of Op.Do cannot be deep-copied")
	assert.Contains(t, err.Error(), "hidden")
	require.NoError(t, dispatch.Handle(srv, "Op.Do", fn), "without Borrows it is an ordinary method")
}

// Misuse gets a clear answer, never a silent second accept loop or a
// nil-pointer dereference.
func TestMisuseIsReported(t *testing.T) {
	t.Run("Register of a value that is not a service", func(t *testing.T) {
		err := dispatch.NewServer().Register(42)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Register of a int: a service is a value of a named, exported type")
	})
	t.Run("methods on the pointer type", func(t *testing.T) {
		err := dispatch.NewServer().Register(Arith{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "pass a pointer to a value of that type")
	})
	t.Run("methods of the wrong shape are logged", func(t *testing.T) {
		var log strings.Builder
		srv := dispatch.NewServer(dispatch.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		require.NoError(t, srv.Register(new(Mixed)))
		assert.Contains(t, log.String(), "method=Mixed.TwoResults")
		assert.Contains(t, log.String(), `why="returns 2 values; needs exactly one, an error"`)
		assert.Contains(t, log.String(), "method=Mixed.ValueReply")
		assert.NotContains(t, log.String(), "Mixed.Good")
	})
	t.Run("Start twice on one listener", func(t *testing.T) {
		srv := dispatch.NewServer()
		defer srv.Close()
		l, err := memory.New().Listen("")
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		err = srv.Start(l)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "already serving the listener")
		assert.ErrorContains(t, srv.Serve(l), "already serving the listener")
	})
	t.Run("Register after Shutdown", func(t *testing.T) {
		srv := dispatch.NewServer()
		require.NoError(t, srv.Shutdown(context.Background()))
		assert.ErrorIs(t, srv.Register(new(Mixed)), dispatch.ErrServerClosed)
		assert.ErrorIs(t, dispatch.Handle(srv, "A.B", func(context.Context, *int, *int) error { return nil }), dispatch.ErrServerClosed)
	})
	t.Run("nil Context", func(t *testing.T) {
		e := paths[0].setup(t)
		assert.PanicsWithValue(t, "dispatch: nil Context", func() {
			//lint:ignore SA1012 the misuse under test
			_ = e.client.Call(nil, "Arith.Multiply", Args{}, new(int))
		})
		assert.PanicsWithValue(t, "dispatch: nil Context", func() {
			//lint:ignore SA1012 the misuse under test
			_, _ = dispatch.Dial(nil, e.tr, e.addr)
		})
	})
}

// Mixed has one method of net/rpc's shape and two of other shapes.
type Mixed struct{}

func (Mixed) Good(args Args, reply *int) error              { return nil }
func (Mixed) TwoResults(args Args, reply *int) (int, error) { return 0, nil }
func (Mixed) ValueReply(args Args, reply int) error         { return nil }

// Invalid options are reported all at once: a Server's by Start and Serve,
// a Client's by Dial and NewClient.
func TestInvalidOptionsAreReportedTogether(t *testing.T) {
	srv := dispatch.NewServer(dispatch.WithMaxCallsPerConn(0), dispatch.WithServerCodecs(nil), dispatch.WithInterceptors(nil), dispatch.WithStreamInterceptors(nil))
	defer srv.Close()
	l, err := memory.New().Listen("")
	require.NoError(t, err)
	defer l.Close()
	err = srv.Start(l)
	require.Error(t, err)
	for _, want := range []string{"WithMaxCallsPerConn(0): must be at least 1", "WithServerCodecs: codec 0 is nil", "WithInterceptors: interceptor 0 is nil",
		"WithStreamInterceptors: interceptor 0 is nil"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.ErrorContains(t, srv.Serve(l), "WithMaxCallsPerConn(0)")

	_, err = dispatch.Dial(context.Background(), memory.New(), "nowhere", dispatch.WithCodec(nil), dispatch.WithShortcut(7))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithCodec(nil)")
	assert.Contains(t, err.Error(), "WithShortcut(7): no such mode")
}

// WithLogger is one option for both ends: the Client's says why a
// connection failed, which ErrShutdown alone does not.
func TestClientLogsWhyItsConnectionFailed(t *testing.T) {
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	tr := memory.New()
	l, err := tr.Listen("")
	require.NoError(t, err)
	defer l.Close()
	srv := dispatch.NewServer(dispatch.WithLogger(logger))
	require.NoError(t, dispatch.Handle(srv, "Who.Am", func(context.Context, *struct{}, *string) error { return nil }))
	require.NoError(t, srv.Start(l))
	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithLogger(logger))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Call(context.Background(), "Who.Am", nil, new(string)))
	srv.Close()
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "dispatch: connection failed") }, waitLong, time.Millisecond)
}

// syncBuffer is a strings.Builder safe for the concurrent writes of a
// logger.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Methods lists what the Server answers, sorted, however it was registered.
func TestServerMethods(t *testing.T) {
	srv := dispatch.NewServer()
	defer srv.Close()
	assert.Empty(t, srv.Methods())
	require.NoError(t, srv.Register(new(Arith)))
	require.NoError(t, dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, a *Args, r *int) error { return nil }))
	ms := srv.Methods()
	assert.Contains(t, ms, "Arith.Multiply")
	assert.Contains(t, ms, "Gen.Add")
	assert.True(t, slices.IsSorted(ms))
	ms[0] = "changed"
	assert.NotEqual(t, "changed", srv.Methods()[0], "the caller's own slice")
}
