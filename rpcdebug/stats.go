package rpcdebug

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// Stats counts the calls of a Server's methods. Make one with New; it is
// safe for concurrent use.
type Stats struct {
	mu      sync.RWMutex
	methods map[string]*counters
}

// counters are one method's figures. The hot fields are atomics, so that
// concurrent calls of one method contend on nothing but them.
type counters struct {
	calls, errors atomic.Int64
	nanos, max    atomic.Int64 // total and longest latency
	mu            sync.Mutex
	paths         map[dispatch.Path]int64
}

// New returns an empty Stats.
func New() *Stats { return &Stats{methods: make(map[string]*counters)} }

// Interceptor returns the interceptor that counts, for
// dispatch.WithInterceptors on the Server. Place it first (outermost) to
// time what the caller waits for, interceptors included.
func (s *Stats) Interceptor() dispatch.Interceptor {
	return func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		start := time.Now()
		err := next(ctx, args, reply)
		took := int64(time.Since(start))
		c := s.method(method)
		c.calls.Add(1)
		if err != nil {
			c.errors.Add(1)
		}
		c.nanos.Add(took)
		for {
			m := c.max.Load()
			if took <= m || c.max.CompareAndSwap(m, took) {
				break
			}
		}
		path := dispatch.Path("unknown")
		if info, ok := dispatch.CallInfoFrom(ctx); ok {
			path = info.Path
		}
		c.mu.Lock()
		c.paths[path]++
		c.mu.Unlock()
		return err
	}
}

// method returns name's counters, making them on its first call.
func (s *Stats) method(name string) *counters {
	s.mu.RLock()
	c := s.methods[name]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c = s.methods[name]; c == nil {
		c = &counters{paths: make(map[dispatch.Path]int64)}
		s.methods[name] = c
	}
	return c
}

// MethodStats is one method's figures at one moment.
type MethodStats struct {
	Method string // "Service.Method"
	Calls  int64  // calls that returned
	Errors int64  // of which failed
	// Mean and Max are the handler's latency, interceptors inside the
	// counting one included; zero before the first call.
	Mean, Max time.Duration
	// Paths counts the calls by the path they took.
	Paths map[dispatch.Path]int64
}

// Snapshot returns the figures of srv's methods, sorted by name: every
// method srv has registered, called or not, and every method counted that
// srv no longer lists (a nil srv lists only those counted).
func (s *Stats) Snapshot(srv *dispatch.Server) []MethodStats {
	names := map[string]bool{}
	if srv != nil {
		for _, m := range srv.Methods() {
			names[m] = true
		}
	}
	s.mu.RLock()
	for m := range s.methods {
		names[m] = true
	}
	s.mu.RUnlock()
	out := make([]MethodStats, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		ms := MethodStats{Method: name, Paths: map[dispatch.Path]int64{}}
		s.mu.RLock()
		c := s.methods[name]
		s.mu.RUnlock()
		if c != nil {
			ms.Calls, ms.Errors = c.calls.Load(), c.errors.Load()
			if ms.Calls > 0 {
				ms.Mean = time.Duration(c.nanos.Load() / ms.Calls)
			}
			ms.Max = time.Duration(c.max.Load())
			c.mu.Lock()
			maps.Copy(ms.Paths, c.paths)
			c.mu.Unlock()
		}
		out = append(out, ms)
	}
	return out
}
