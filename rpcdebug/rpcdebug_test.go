package rpcdebug_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/rpcdebug"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// served returns a Server counted by stats, serving Calc.Add, Calc.Fail
// and Calc.Idle on a memory listener, and its address. opts are the
// Server's, stats.Option() by default.
func served(t *testing.T, stats *rpcdebug.Stats, opts ...dispatch.ServerOption) (*dispatch.Server, *memory.Transport, string) {
	if opts == nil {
		opts = []dispatch.ServerOption{stats.Option()}
	}
	srv := dispatch.NewServer(opts...)
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, n *int, r *int) error { *r = *n + 1; return nil }))
	require.NoError(t, dispatch.Handle(srv, "Calc.Fail", func(ctx context.Context, n *int, r *int) error { return errors.New("no") }))
	require.NoError(t, dispatch.Handle(srv, "Calc.Idle", func(ctx context.Context, n *int, r *int) error { return nil }))
	tr := memory.New()
	l, err := tr.Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	return srv, tr, l.Addr().String()
}

// Calls are counted by method and by path, with their errors; a method
// never called is listed with nothing counted.
func TestSnapshot(t *testing.T) {
	stats := rpcdebug.New()
	srv, tr, addr := served(t, stats)
	for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy} {
		c, err := dispatch.Dial(context.Background(), tr, addr, dispatch.WithShortcut(mode))
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { assert.NoError(t, c.Call(context.Background(), "Calc.Add", 1, new(int))) })
		}
		wg.Wait()
		assert.Error(t, c.Call(context.Background(), "Calc.Fail", 1, new(int)))
		c.Close()
	}
	rows := stats.Snapshot(srv)
	require.Len(t, rows, 3)
	add, fail, idle := rows[0], rows[1], rows[2]
	assert.Equal(t, "Calc.Add", add.Method)
	assert.EqualValues(t, 20, add.Calls)
	assert.Zero(t, add.Errors)
	assert.Equal(t, map[dispatch.Path]int64{"memory": 10, dispatch.PathShortcutCopy: 10}, add.Paths)
	assert.Positive(t, add.Mean)
	assert.GreaterOrEqual(t, add.Max, add.Mean)
	assert.Equal(t, "Calc.Fail", fail.Method)
	assert.EqualValues(t, 2, fail.Calls)
	assert.EqualValues(t, 2, fail.Errors)
	assert.Equal(t, rpcdebug.MethodStats{Method: "Calc.Idle", Paths: map[dispatch.Path]int64{}, Ends: map[string]int64{}}, idle)
}

// The page lists every method with its figures, as HTML by default and as
// text on request; the method names are escaped.
func TestHandler(t *testing.T) {
	stats := rpcdebug.New()
	srv, tr, addr := served(t, stats)
	require.NoError(t, dispatch.Handle(srv, "Odd.<b>", func(ctx context.Context, n *int, r *int) error { return nil }))
	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Call(context.Background(), "Calc.Add", 1, new(int)))
	require.NoError(t, dispatch.HandleStream(srv, "Orders.Watch", watch))
	ended := openWatch(t, c, 3)
	ended.Close()
	openWatch(t, c, 2) // open until the test ends
	settled(t, stats, srv, "Orders.Watch", func(m rpcdebug.MethodStats) bool {
		return m.Open == 1 && m.MsgsOut == 5 && m.Ends["canceled"] == 1
	})

	get := func(target, accept string) (string, string) {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		stats.Handler(srv).ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		return rec.Header().Get("Content-Type"), rec.Body.String()
	}
	ctype, body := get("/debug/rpc", "")
	assert.Equal(t, "text/html; charset=utf-8", ctype)
	assert.Contains(t, body, "<td>Calc.Add</td><td class=\"n\">1</td><td class=\"n\">0</td>")
	assert.Contains(t, body, "<td>Calc.Idle</td><td class=\"n\">0</td>")
	assert.Contains(t, body, `<td>Orders.Watch</td><td class="n">0</td><td class="n">0</td><td class="n">0s</td><td class="n">0s</td>`+
		`<td class="n">2</td><td class="n">1</td><td class="n">2</td><td class="n">5</td><td>canceled=1</td><td>memory=2</td></tr>`)
	assert.Contains(t, body, "Odd.&lt;b&gt;")
	assert.NotContains(t, body, "<script")

	for _, tc := range []struct{ target, accept string }{{"/debug/rpc?format=text", ""}, {"/debug/rpc", "text/plain"}} {
		ctype, body = get(tc.target, tc.accept)
		assert.Equal(t, "text/plain; charset=utf-8", ctype)
		lines := strings.Split(strings.TrimSpace(body), "\n")
		require.Len(t, lines, 6)
		assert.Regexp(t, `^METHOD\s+CALLS\s+ERRORS\s+MEAN\s+MAX\s+STREAMS\s+OPEN\s+MSGS-IN\s+MSGS-OUT\s+ENDS\s+PATHS$`, lines[0])
		assert.Regexp(t, `^Calc\.Add\s+1\s+0\s+\S+\s+\S+\s+0\s+0\s+0\s+0\s+-\s+memory=1$`, lines[1])
		assert.Regexp(t, `^Calc\.Fail\s+0\s+0\s+0s\s+0s\s+0\s+0\s+0\s+0\s+-\s+-$`, lines[2])
		assert.Regexp(t, `^Orders\.Watch\s+0\s+0\s+0s\s+0s\s+2\s+1\s+2\s+5\s+canceled=1\s+memory=2$`, lines[5])
	}
}

// watch is a stream that never ends of its own: given n, it sends n events,
// then waits for its caller to go.
func watch(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
	for n, err := range s.Recv() {
		if err != nil {
			return err
		}
		if *n < 0 {
			return &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: "negative"}
		}
		for i := range *n {
			if err := s.Send(&i); err != nil {
				return err
			}
		}
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// openWatch opens a stream of Orders.Watch asking for n events and takes
// them; the stream stays open until it is closed, or the test ends.
// Breaking out of Recv's range would close it, so the events are pulled.
func openWatch(t *testing.T, c *dispatch.Client, n int) *dispatch.Stream[int, int] {
	t.Helper()
	s, err := dispatch.OpenStream[int, int](context.Background(), c, "Orders.Watch")
	require.NoError(t, err)
	next, stop := iter.Pull2(s.Recv())
	t.Cleanup(func() { stop(); s.Close() })
	require.NoError(t, s.Send(&n))
	for i := range n {
		v, err, ok := next()
		require.True(t, ok)
		require.NoError(t, err)
		require.Equal(t, i, *v)
	}
	return s
}

// settled waits until method's figures satisfy ok — a stream's end reaches
// the Server after its caller has gone — and returns them.
func settled(t *testing.T, stats *rpcdebug.Stats, srv *dispatch.Server, method string, ok func(rpcdebug.MethodStats) bool) rpcdebug.MethodStats {
	t.Helper()
	var last rpcdebug.MethodStats
	require.Eventually(t, func() bool {
		for _, m := range stats.Snapshot(srv) {
			if m.Method == method {
				last = m
				return ok(m)
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "%s never settled: %+v", method, last)
	return last
}

// Streams are counted beside calls: opened, still open, ended by outcome,
// and their messages each way — those of a stream still open included, so
// that a watch that never ends shows what it carries — by path; a stream
// a later interceptor refuses is counted with its code.
func TestStreams(t *testing.T) {
	stats := rpcdebug.New()
	deny := func(ctx context.Context, method string) (context.Context, func(error), error) {
		if md := dispatch.MetadataFrom(ctx); md["deny"] != "" {
			return nil, nil, &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "denied"}
		}
		return ctx, func(error) {}, nil
	}
	srv, tr, addr := served(t, stats, stats.Option(), dispatch.WithStreamInterceptors(deny))
	require.NoError(t, dispatch.HandleStream(srv, "Orders.Watch", watch))
	direct, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	defer direct.Close()
	short, err := dispatch.Dial(context.Background(), tr, addr, dispatch.WithShortcut(dispatch.ShortcutCopy))
	require.NoError(t, err)
	defer short.Close()

	// Open: 1000 events on the network and 7 on the shortcut, counted
	// while both streams run.
	a := openWatch(t, direct, 1000)
	b := openWatch(t, short, 7)
	m := settled(t, stats, srv, "Orders.Watch", func(m rpcdebug.MethodStats) bool { return m.MsgsOut == 1007 })
	assert.Equal(t, rpcdebug.MethodStats{Method: "Orders.Watch", Streams: 2, Open: 2, MsgsIn: 2, MsgsOut: 1007,
		Paths: map[dispatch.Path]int64{"memory": 1, dispatch.PathShortcutCopy: 1}, Ends: map[string]int64{}}, m)

	// Ended: by the caller (canceled), by the handler's error, by a
	// refusal of the interceptor after rpcdebug's.
	a.Close()
	b.Close()
	for _, err := range dispatch.CallStream[int, int](context.Background(), direct, "Orders.Watch", new(-1)) {
		assert.ErrorContains(t, err, "negative")
	}
	denied := dispatch.WithMetadata(context.Background(), dispatch.Metadata{"deny": "yes"})
	for _, err := range dispatch.CallStream[int, int](denied, direct, "Orders.Watch", new(1)) {
		assert.ErrorContains(t, err, "denied")
	}
	m = settled(t, stats, srv, "Orders.Watch", func(m rpcdebug.MethodStats) bool { return m.Open == 0 })
	assert.Equal(t, rpcdebug.MethodStats{Method: "Orders.Watch", Streams: 4, MsgsIn: 3, MsgsOut: 1007,
		Paths: map[dispatch.Path]int64{"memory": 3, dispatch.PathShortcutCopy: 1},
		Ends:  map[string]int64{"canceled": 2, "invalid_argument": 1, "permission_denied": 1}}, m)

	// The interceptors installed by hand count as Option's do; a Server
	// with only the call interceptor counts calls and no streams.
	for _, tc := range []struct {
		name    string
		opts    func(*rpcdebug.Stats) []dispatch.ServerOption
		streams int64
	}{
		{"both", func(s *rpcdebug.Stats) []dispatch.ServerOption {
			return []dispatch.ServerOption{dispatch.WithInterceptors(s.Interceptor()), dispatch.WithStreamInterceptors(s.StreamInterceptor())}
		}, 1},
		{"calls only", func(s *rpcdebug.Stats) []dispatch.ServerOption {
			return []dispatch.ServerOption{dispatch.WithInterceptors(s.Interceptor())}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stats := rpcdebug.New()
			srv, tr, addr := served(t, stats, tc.opts(stats)...)
			require.NoError(t, dispatch.HandleStream(srv, "Orders.Watch", watch))
			c, err := dispatch.Dial(context.Background(), tr, addr)
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.Call(context.Background(), "Calc.Add", 1, new(int)))
			openWatch(t, c, 2).Close()
			rows := stats.Snapshot(srv)
			assert.EqualValues(t, 1, rows[0].Calls, "Calc.Add")
			assert.Equal(t, tc.streams, rows[3].Streams, "Orders.Watch")
		})
	}
}

// The page shows the replicas of the Clients shown, each in or out, until
// when and why, with its calls in flight and failures; a Client no longer
// shown leaves the page.
func TestReplicas(t *testing.T) {
	stats := rpcdebug.New()
	srv, tr, addr := served(t, stats)
	c, err := dispatch.Dial(context.Background(), tr, addr+",nobody", dispatch.WithResolver(resolver.Static{}),
		dispatch.WithEjection(1, time.Hour))
	require.NoError(t, err)
	defer c.Close()
	for range 2 { // round robin: one of them tries nobody, and goes on to addr
		require.NoError(t, c.Call(context.Background(), "Calc.Add", 1, new(int)))
	}
	stats.ShowReplicas("calc", c)
	snap := stats.ReplicasSnapshot()
	require.Len(t, snap, 1)
	assert.Equal(t, "calc", snap[0].Name)
	assert.Equal(t, c.Replicas(), snap[0].Replicas)

	get := func(target string) string {
		rec := httptest.NewRecorder()
		stats.Handler(srv).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		return rec.Body.String()
	}
	text := strings.Split(get("/debug/rpc?format=text"), "\n\n")
	require.Len(t, text, 2, "the methods, then the replicas")
	lines := strings.Split(strings.TrimSpace(text[1]), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^CLIENT\s+REPLICA\s+STATE\s+IN-FLIGHT\s+FAILURES\s+EJECTIONS\s+WHY$`, lines[0])
	assert.Regexp(t, `^calc\s+`+regexp.QuoteMeta(addr)+`\s+in\s+0\s+0\s+0\s+-$`, lines[1])
	assert.Regexp(t, `^calc\s+nobody\s+out until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \((59m\d\ds|1h0m0s) left\)\s+0\s+0\s+1\s+dispatch: dial memory nobody: .+$`, lines[2])
	html := get("/debug/rpc")
	assert.Contains(t, html, "<h2>Replicas</h2>")
	assert.Regexp(t, `<tr><td>calc</td><td>nobody</td><td>out until [^<]+</td><td class="n">0</td><td class="n">0</td><td class="n">1</td><td>dispatch: dial memory nobody: [^<]+</td></tr>`, html)

	stats.ShowReplicas("calc", nil)
	assert.Empty(t, stats.ReplicasSnapshot())
	assert.NotContains(t, get("/debug/rpc"), "Replicas")
	assert.NotContains(t, get("/debug/rpc?format=text"), "CLIENT")
}
