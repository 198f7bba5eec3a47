package resolver_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/resolver"
)

func TestSplitTarget(t *testing.T) {
	for _, tt := range []struct {
		target, scheme, rest string
		ok                   bool
	}{
		{"dns:///a:1", "dns", "a:1", true},
		{"dns://8.8.8.8/a:1", "dns", "a:1", true},
		{"dns://8.8.8.8:53/a:1", "dns", "a:1", true},
		{"dns://[::1]:53/a:1", "dns", "a:1", true},
		{"dns:///_grpc._tcp.svc.ns.svc.cluster.local", "dns", "_grpc._tcp.svc.ns.svc.cluster.local", true},
		{"static:///a:1,b:2", "static", "a:1,b:2", true},
		{"dns:a:1", "dns", "a:1", true},
		{"dns:svc", "dns", "svc", true},
		{"DNS:///a:1", "dns", "a:1", true}, // schemes are not case-sensitive
		{"my-scheme+v2:///x", "my-scheme+v2", "x", true},
		{"dns:///", "dns", "", true},
		{"dns://a:1", "dns", "", true}, // the authority "a:1", and nothing after
		{"a:1", "", "", false},
		{"localhost:7000", "", "", false},
		{"svc.ns.svc.cluster.local:7000", "", "", false},
		{"127.0.0.1:80", "", "", false},
		{"[::1]:80", "", "", false},
		{"::1", "", "", false},
		{"a:", "", "", false},
		{":80", "", "", false},
		{"1dns:///a:1", "", "", false}, // a scheme begins with a letter
		{"a.b:///x", "", "", false},    // a dot: a host, not a scheme
		{"a", "", "", false},
		{"", "", "", false},
	} {
		scheme, rest, ok := resolver.SplitTarget(tt.target)
		require.Equal(t, tt.ok, ok, "%q", tt.target)
		require.Equal(t, tt.scheme, scheme, "%q", tt.target)
		require.Equal(t, tt.rest, rest, "%q", tt.target)
	}
}

func TestStatic(t *testing.T) {
	_, ch := follow(t, resolver.Static{}, "a:1, b:2,,c:3 ")
	require.Equal(t, []string{"a:1", "b:2", "c:3"}, nextAddrs(t, ch))

	// Addrs, when set, is the list; the report is a copy of it.
	addrs := []string{"x:1", "y:2"}
	w, ch := follow(t, resolver.Static{Addrs: addrs}, "ignored:1")
	got := nextAddrs(t, ch)
	require.Equal(t, addrs, got)
	got[0] = "changed:1"
	require.Equal(t, "x:1", addrs[0])

	// Nothing to refresh: no more reports.
	w.Refresh()
	noReport(t, ch)

	for _, s := range []resolver.Static{{}, {Addrs: []string{}}} {
		w, err := s.Resolve(" , ", func([]string, error) { t.Error("report called") })
		require.ErrorIs(t, err, resolver.ErrNoAddresses)
		require.Nil(t, w)
	}
}

func TestFunc(t *testing.T) {
	var calls atomic.Int32
	var fail atomic.Bool
	f := resolver.Func(func(target string) ([]string, error) {
		n := calls.Add(1)
		if fail.Load() {
			return nil, errors.New("boom")
		}
		if n == 3 {
			return nil, nil
		}
		return []string{target + "-" + string(rune('0'+n))}, nil
	})
	w, ch := follow(t, f, "t")
	// The first report is made before Resolve returns.
	require.Len(t, ch, 1)
	require.Equal(t, []string{"t-1"}, nextAddrs(t, ch))

	w.Refresh()
	require.Equal(t, []string{"t-2"}, nextAddrs(t, ch))
	w.Refresh()
	require.ErrorIs(t, nextErr(t, ch), resolver.ErrNoAddresses) // an empty answer
	fail.Store(true)
	w.Refresh()
	require.EqualError(t, nextErr(t, ch), "boom")

	require.NoError(t, w.Close())
	w.Refresh() // after Close: nothing
	noReport(t, ch)
	require.Equal(t, int32(4), calls.Load())
}

func TestFuncRefreshDoesNotBlock(t *testing.T) {
	// f is slow (here: blocked); Refresh returns all the same, and the
	// Refreshes made meanwhile are answered by one call.
	var calls atomic.Int32
	inF := make(chan struct{}, 10)
	release := make(chan struct{})
	f := resolver.Func(func(string) ([]string, error) {
		if calls.Add(1) > 1 {
			inF <- struct{}{}
			<-release
		}
		return []string{"a:1"}, nil
	})
	w, ch := follow(t, f, "")
	nextAddrs(t, ch)

	w.Refresh()
	<-inF
	for range 10 {
		w.Refresh()
	}
	close(release)
	nextAddrs(t, ch)
	nextAddrs(t, ch)
	require.NoError(t, w.Close())
	require.Equal(t, int32(3), calls.Load())
	noReport(t, ch)
}

func TestFuncRefreshFromReport(t *testing.T) {
	// report may call Refresh (the Watch's, once it has it): no deadlock.
	var (
		mu    sync.Mutex
		w     resolver.Watch
		count int
	)
	done := make(chan struct{})
	report := func([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		count++
		switch {
		case w == nil: // the first report, from Resolve
		case count < 5:
			w.Refresh()
		case count == 5:
			close(done)
		}
	}
	watch, err := resolver.Func(func(string) ([]string, error) { return []string{"a:1"}, nil }).Resolve("", report)
	require.NoError(t, err)
	mu.Lock()
	w = watch
	mu.Unlock()
	w.Refresh()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Refresh from report: no more reports")
	}
	require.NoError(t, w.Close())
}

func TestFuncCloseWaits(t *testing.T) {
	var calls atomic.Int32
	inF := make(chan struct{})
	release := make(chan struct{})
	f := resolver.Func(func(string) ([]string, error) {
		if calls.Add(1) == 2 {
			close(inF)
			<-release
		}
		return []string{"a:1"}, nil
	})
	var closed atomic.Bool
	var reports atomic.Int32
	w, err := f.Resolve("", func([]string, error) {
		if closed.Load() {
			t.Error("report after Close returned")
		}
		reports.Add(1)
	})
	require.NoError(t, err)
	w.Refresh()
	<-inF
	closeDone := make(chan struct{})
	go func() {
		defer close(closeDone)
		w.Close()
		closed.Store(true)
	}()
	time.Sleep(20 * time.Millisecond) // time for Close to return, were it not to wait
	select {
	case <-closeDone:
		t.Fatal("Close returned while f was running")
	default:
	}
	close(release)
	<-closeDone
	// What f returned once Close was called is not reported.
	require.Equal(t, int32(1), reports.Load())
}

func TestSchemes(t *testing.T) {
	var got []string
	var mu sync.Mutex
	record := func(name string) resolver.Func {
		return func(target string) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, name+" "+target)
			return []string{"a:1"}, nil
		}
	}
	s := resolver.Schemes{"one": record("one"), "two": record("two")}
	for _, target := range []string{"one:///x:1", "two://auth/y", "ONE:z"} {
		_, ch := follow(t, s, target)
		nextAddrs(t, ch)
	}
	require.Equal(t, []string{"one x:1", "two y", "one z"}, got)

	for target, msg := range map[string]string{
		"x:1":          "has no scheme",
		"svc.test:80":  "has no scheme",
		"":             "has no scheme",
		"three:///x:1": `no resolver for scheme "three"`,
		"one://x:1":    "names nothing after its scheme",
		"one:///":      "names nothing after its scheme",
	} {
		w, err := s.Resolve(target, func([]string, error) { t.Errorf("%q: report called", target) })
		require.ErrorContains(t, err, msg, "%q", target)
		require.Nil(t, w)
	}
}

func TestDefaultStatic(t *testing.T) {
	_, ch := follow(t, resolver.Default, "static:///a:1,b:2")
	require.Equal(t, []string{"a:1", "b:2"}, nextAddrs(t, ch))
}
