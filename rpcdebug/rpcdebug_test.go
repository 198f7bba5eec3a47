package rpcdebug_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/rpcdebug"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// served returns a Server counted by stats, serving Calc.Add, Calc.Fail
// and Calc.Idle on a memory listener, and its address.
func served(t *testing.T, stats *rpcdebug.Stats) (*dispatch.Server, *memory.Transport, string) {
	srv := dispatch.NewServer(dispatch.WithInterceptors(stats.Interceptor()))
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
	assert.Equal(t, rpcdebug.MethodStats{Method: "Calc.Idle", Paths: map[dispatch.Path]int64{}}, idle)
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
	assert.Contains(t, body, "Odd.&lt;b&gt;")
	assert.NotContains(t, body, "<script")

	for _, tc := range []struct{ target, accept string }{{"/debug/rpc?format=text", ""}, {"/debug/rpc", "text/plain"}} {
		ctype, body = get(tc.target, tc.accept)
		assert.Equal(t, "text/plain; charset=utf-8", ctype)
		lines := strings.Split(strings.TrimSpace(body), "\n")
		require.Len(t, lines, 5)
		assert.Regexp(t, `^METHOD\s+CALLS\s+ERRORS\s+MEAN\s+MAX\s+PATHS$`, lines[0])
		assert.Regexp(t, `^Calc\.Add\s+1\s+0\s+\S+\s+\S+\s+memory=1$`, lines[1])
		assert.Regexp(t, `^Calc\.Fail\s+0\s+0\s+0s\s+0s\s+-$`, lines[2])
	}
}
