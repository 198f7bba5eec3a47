package rpcdebug

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// Stats counts the calls and streams of a Server's methods. Make one with
// New; it is safe for concurrent use.
type Stats struct {
	mu      sync.RWMutex
	methods map[string]*counters
	clients map[string]*dispatch.Client // whose replicas the page shows
}

// counters are one method's figures. The hot fields are atomics, so that
// concurrent calls of one method contend on nothing but them.
type counters struct {
	calls, errors atomic.Int64
	nanos, max    atomic.Int64 // total and longest latency
	mu            sync.Mutex
	streams       int64 // streams opened
	paths         map[dispatch.Path]int64
	ends          map[string]int64 // streams ended, by outcome
	// live holds the counts of the streams open, read by Snapshot so
	// that a stream that never ends (a watch) shows what it carries;
	// in and out are those of the streams ended.
	live    map[*dispatch.StreamMessages]struct{}
	in, out int64
}

// New returns an empty Stats.
func New() *Stats {
	return &Stats{methods: make(map[string]*counters), clients: make(map[string]*dispatch.Client)}
}

// Option returns the one option that makes a Server counted by s, calls
// and streams alike: give it to dispatch.NewServer. It installs Interceptor
// and StreamInterceptor, each first in its chain unless options given
// before it add interceptors of their own.
func (s *Stats) Option() dispatch.ServerOption {
	return dispatch.ServerOptions(dispatch.WithInterceptors(s.Interceptor()),
		dispatch.WithStreamInterceptors(s.StreamInterceptor()))
}

// Interceptor returns the interceptor that counts calls, for
// dispatch.WithInterceptors on the Server, where Option does not suit (a
// chain ordered by hand). Place it first (outermost) to time what the
// caller waits for, interceptors included.
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
		c.mu.Lock()
		c.paths[pathOf(ctx)]++
		c.mu.Unlock()
		return err
	}
}

// StreamInterceptor returns the interceptor that counts streams — opened,
// ended by outcome, messages each way — for dispatch.WithStreamInterceptors
// on the Server, where Option does not suit. Place it first, so that the
// streams other interceptors refuse are counted too.
func (s *Stats) StreamInterceptor() dispatch.StreamInterceptor {
	return func(ctx context.Context, method string) (context.Context, func(error), error) {
		c := s.method(method)
		msgs := dispatch.StreamMessagesFrom(ctx)
		c.mu.Lock()
		c.streams++
		c.paths[pathOf(ctx)]++
		if msgs != nil {
			c.live[msgs] = struct{}{}
		}
		c.mu.Unlock()
		return ctx, func(err error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.ends[outcome(err)]++
			if msgs != nil {
				delete(c.live, msgs)
				c.in += msgs.Received()
				c.out += msgs.Sent()
			}
		}, nil
	}
}

// pathOf is the path of the call or stream whose context ctx is.
func pathOf(ctx context.Context) dispatch.Path {
	if info, ok := dispatch.CallInfoFrom(ctx); ok {
		return info.Path
	}
	return "unknown"
}

// outcome names how a stream ended: "ok", or its error's code
// ("unknown" for an error that carries none).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var e *dispatch.Error
	if errors.As(err, &e) && e.Code != dispatch.CodeUnknown {
		return string(e.Code)
	}
	return "unknown"
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
		c = &counters{paths: make(map[dispatch.Path]int64), ends: make(map[string]int64),
			live: make(map[*dispatch.StreamMessages]struct{})}
		s.methods[name] = c
	}
	return c
}

// MethodStats is one method's figures at one moment.
type MethodStats struct {
	Method string // "Service.Method"
	// Bodies says what the bytes of a method of raw bodies hold, when its
	// registration said (dispatch.WithEncoding: a gRPC method's, "protobuf
	// grpc.testing.SimpleRequest → grpc.testing.SimpleResponse (gRPC
	// method /grpc.testing.TestService/UnaryCall)"); empty otherwise.
	Bodies string
	Calls  int64 // calls that returned
	Errors int64 // of which failed
	// Mean and Max are the handler's latency, interceptors inside the
	// counting one included; zero before the first call. Streams are not
	// timed.
	Mean, Max time.Duration
	// Paths counts the calls, and the streams, by the path they took.
	Paths map[dispatch.Path]int64

	// Streams is how many streams of a streaming method were opened, and
	// Open how many of them have not ended yet.
	Streams, Open int64
	// Ends counts the streams ended by their outcome: "ok", or the code
	// of the error they ended with ("unknown" for none).
	Ends map[string]int64
	// MsgsIn and MsgsOut are the messages the streams carried, those open
	// included: from the callers (those the handlers received) and to
	// them (those the handlers sent).
	MsgsIn, MsgsOut int64
}

// Snapshot returns the figures of srv's methods, sorted by name: every
// method srv has registered, called or not, and every method counted that
// srv no longer lists (a nil srv lists only those counted).
func (s *Stats) Snapshot(srv *dispatch.Server) []MethodStats {
	names := map[string]bool{}
	bodies := map[string]string{}
	if srv != nil {
		for _, m := range srv.MethodInfos() {
			names[m.Name] = true
			if m.Encoding != nil {
				bodies[m.Name] = m.Encoding.String()
			}
		}
	}
	s.mu.RLock()
	for m := range s.methods {
		names[m] = true
	}
	s.mu.RUnlock()
	out := make([]MethodStats, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		ms := MethodStats{Method: name, Bodies: bodies[name], Paths: map[dispatch.Path]int64{}, Ends: map[string]int64{}}
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
			ms.Streams = c.streams
			maps.Copy(ms.Paths, c.paths)
			maps.Copy(ms.Ends, c.ends)
			ms.MsgsIn, ms.MsgsOut = c.in, c.out
			for m := range c.live {
				ms.MsgsIn += m.Received()
				ms.MsgsOut += m.Sent()
			}
			c.mu.Unlock()
			ms.Open = ms.Streams
			for _, n := range ms.Ends {
				ms.Open -= n
			}
		}
		out = append(out, ms)
	}
	return out
}
