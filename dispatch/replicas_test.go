package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
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
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// replicaFleet is a set of replicas of one service, each a Server of its
// own on its own listener, that a test can kill, restart and shut down.
type replicaFleet struct {
	t     *testing.T
	tr    transport.Transport
	opts  []dispatch.ServerOption // every replica's
	gate  chan struct{}           // closed: Who.Am pauses no more, Who.Unavailable answers
	deny  chan struct{}           // closed: Who.Unavailable answers
	mu    sync.Mutex
	srvs  []*dispatch.Server
	addrs []string
	calls []*atomic.Int64 // calls each replica's handlers began
}

// newFleet starts n replicas over tr, listening on listen(i), each a
// Server made with opts.
func newFleet(t *testing.T, tr transport.Transport, n int, listen func(i int) string, opts ...dispatch.ServerOption) *replicaFleet {
	f := &replicaFleet{t: t, tr: tr, opts: opts, gate: make(chan struct{}), deny: make(chan struct{})}
	for i := range n {
		f.calls = append(f.calls, new(atomic.Int64))
		f.srvs = append(f.srvs, nil)
		f.addrs = append(f.addrs, "")
		f.start(i, listen(i))
	}
	return f
}

// start serves replica i at addr.
func (f *replicaFleet) start(i int, addr string) {
	srv := dispatch.NewServer(f.opts...)
	calls := f.calls[i]
	name := fmt.Sprint("replica-", i)
	require.NoError(f.t, dispatch.Handle(srv, "Who.Am", func(ctx context.Context, pause *time.Duration, who *string) error {
		calls.Add(1)
		if *pause > 0 {
			select {
			case <-time.After(*pause):
			case <-f.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		*who = name
		return nil
	}))
	require.NoError(f.t, dispatch.Handle(srv, "Who.Fails", func(ctx context.Context, _ *int, _ *string) error {
		calls.Add(1)
		return &dispatch.Error{Code: dispatch.CodeNotFound, Message: "no such thing"}
	}))
	require.NoError(f.t, dispatch.Handle(srv, "Who.Unavailable", func(ctx context.Context, _ *int, _ *string) error {
		calls.Add(1)
		select {
		case <-f.gate:
		case <-f.deny:
		case <-ctx.Done():
		}
		return &dispatch.Error{Code: dispatch.CodeUnavailable, Message: "cannot serve now"}
	}))
	require.NoError(f.t, dispatch.HandleStream(srv, "Who.Count", func(ctx context.Context, s *dispatch.ServerStream[int, string]) error {
		calls.Add(1)
		for range 3 {
			if err := s.Send(&name); err != nil {
				return err
			}
		}
		return nil
	}))
	l, err := f.tr.Listen(addr)
	require.NoError(f.t, err)
	require.NoError(f.t, srv.Start(l))
	f.t.Cleanup(func() { srv.Close() })
	f.mu.Lock()
	f.srvs[i], f.addrs[i] = srv, l.Addr().String()
	f.mu.Unlock()
}

func (f *replicaFleet) target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprint("static:///", joinAddrs(f.addrs))
}

func joinAddrs(as []string) string {
	s := ""
	for i, a := range as {
		if i > 0 {
			s += ","
		}
		s += a
	}
	return s
}

func (f *replicaFleet) counts() []int64 {
	var n []int64
	for _, c := range f.calls {
		n = append(n, c.Load())
	}
	return n
}

func (f *replicaFleet) dial(t *testing.T, opts ...dispatch.ClientOption) *dispatch.Client {
	c, err := dispatch.Dial(t.Context(), f.tr, f.target(), append([]dispatch.ClientOption{dispatch.WithResolver(resolver.Default)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func whoAmI(ctx context.Context, c *dispatch.Client, pause time.Duration) (string, error) {
	var s string
	err := c.Call(ctx, "Who.Am", &pause, &s)
	return s, err
}

// Round-robin takes the replicas in turn; a handler's error is the
// caller's, not a reason to try elsewhere; streams are balanced as calls.
func TestReplicasRoundRobin(t *testing.T) {
	f := newFleet(t, memory.New(), 3, func(int) string { return "" })
	c := f.dial(t)
	seen := map[string]int{}
	for range 30 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		seen[s]++
	}
	assert.Equal(t, map[string]int{"replica-0": 10, "replica-1": 10, "replica-2": 10}, seen)

	before := f.counts()
	var s string
	err := c.Call(t.Context(), "Who.Fails", new(int), &s)
	var e *dispatch.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, dispatch.CodeNotFound, e.Code)
	after := f.counts()
	total := func(n []int64) (x int64) {
		for _, v := range n {
			x += v
		}
		return x
	}
	assert.Equal(t, total(before)+1, total(after), "a handler's error is not retried")

	streams := map[string]int{}
	for range 6 {
		for s, err := range dispatch.CallStream[int, string](t.Context(), c, "Who.Count", new(0)) {
			require.NoError(t, err)
			streams[*s]++
		}
	}
	assert.Equal(t, map[string]int{"replica-0": 6, "replica-1": 6, "replica-2": 6}, streams)
}

// The least-loaded balancer sends calls away from a replica that holds
// many: with calls stuck on one replica, no new call goes to it, where
// round-robin would send it a third.
func TestReplicasLeastLoaded(t *testing.T) {
	f := newFleet(t, memory.New(), 3, func(int) string { return "" })
	r := &pushResolver{first: f.addrs[:1]}
	c, err := dispatch.Dial(t.Context(), f.tr, "svc", dispatch.WithResolver(r), dispatch.WithBalancer(dispatch.LeastLoaded))
	require.NoError(t, err)
	defer c.Close()
	slowCtx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range 12 {
		wg.Go(func() { _, _ = whoAmI(slowCtx, c, time.Hour) })
	}
	require.Eventually(t, func() bool { return f.calls[0].Load() == 12 }, 10*time.Second, time.Millisecond)
	r.push(f.addrs, nil)
	seen := map[string]int{}
	for range 30 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		seen[s]++
	}
	assert.Zero(t, seen["replica-0"], "%v", seen)
	assert.Equal(t, 30, seen["replica-1"]+seen["replica-2"])
	assert.Greater(t, seen["replica-1"], 3, "%v", seen)
	assert.Greater(t, seen["replica-2"], 3, "%v", seen)
}

// The Dial of an unresolvable or invalid target fails at once, clearly;
// so do invalid replica options.
func TestReplicasDialErrors(t *testing.T) {
	tr := memory.New()
	_, err := dispatch.Dial(t.Context(), tr, "a:1", dispatch.WithResolver(resolver.Default))
	assert.ErrorContains(t, err, "no scheme")
	_, err = dispatch.Dial(t.Context(), tr, "nope:///x", dispatch.WithResolver(resolver.Default))
	assert.ErrorContains(t, err, `no resolver for scheme "nope"`)
	failing := resolver.Func(func(string) ([]string, error) { return nil, errors.New("registry down") })
	_, err = dispatch.Dial(t.Context(), tr, "svc", dispatch.WithResolver(failing))
	assert.ErrorContains(t, err, "registry down")
	_, err = dispatch.Dial(t.Context(), tr, "svc", dispatch.WithResolver(nil), dispatch.WithBalancer(7), dispatch.WithLocalLimit(-1),
		dispatch.WithEjection(0, time.Second), dispatch.WithRetryBudget(dispatch.RetryBudget{}))
	for _, want := range []string{"WithResolver(nil)", "WithBalancer", "WithLocalLimit", "WithEjection", "WithRetryBudget"} {
		assert.ErrorContains(t, err, want)
	}
	// A time whose doublings overflow a Duration: d<<5 wrapped
	// negative, a replica ejected "until the past", never left out.
	_, err = dispatch.Dial(t.Context(), tr, "svc", dispatch.WithResolver(resolver.Default), dispatch.WithEjection(3, math.MaxInt64/32+1))
	assert.ErrorContains(t, err, "WithEjection(80063h59m36.151711744s): the time must be at most 80063h59m36.151711743s")
	c, err := dispatch.Dial(t.Context(), tr, "static:///a:1", dispatch.WithResolver(resolver.Default), dispatch.WithEjection(3, math.MaxInt64/32))
	if assert.NoError(t, err, "the largest time WithEjection takes") {
		c.Close()
	}
	_, err = dispatch.NewClient(nopSocket{}, dispatch.WithResolver(resolver.Default))
	assert.ErrorContains(t, err, "NewClient with WithResolver")
}

type nopSocket struct{ transport.Socket }

// pushResolver reports what the test pushes.
type pushResolver struct {
	mu      sync.Mutex
	report  func([]string, error)
	first   []string
	refresh func() // called by Refresh, if set
}

func (p *pushResolver) Resolve(_ string, report func([]string, error)) (resolver.Watch, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report = report
	report(p.first, nil)
	return p, nil
}

func (p *pushResolver) push(addrs []string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.report != nil {
		p.report(addrs, err)
	}
}

// setRefresh makes Refresh call f.
func (p *pushResolver) setRefresh(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refresh = f
}

func (p *pushResolver) Refresh() {
	p.mu.Lock()
	f := p.refresh
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

func (p *pushResolver) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report = nil
	return nil
}

// A Client of replicas follows its resolver: addresses added are called,
// addresses removed are not, a replica removed with calls in flight
// finishes them, and an error or an empty set from the resolver keeps the
// last set.
func TestReplicasFollowResolver(t *testing.T) {
	f := newFleet(t, memory.New(), 3, func(int) string { return "" })
	r := &pushResolver{first: f.addrs[:1]}
	c, err := dispatch.Dial(t.Context(), f.tr, "svc", dispatch.WithResolver(r))
	require.NoError(t, err)
	defer c.Close()
	for range 6 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		assert.Equal(t, "replica-0", s)
	}
	slow := make(chan error, 1)
	go func() {
		s, err := whoAmI(t.Context(), c, 200*time.Millisecond)
		if err == nil && s != "replica-0" {
			err = fmt.Errorf("answered by %s", s)
		}
		slow <- err
	}()
	require.Eventually(t, func() bool { return f.calls[0].Load() == 7 }, 10*time.Second, time.Millisecond)
	r.push(f.addrs[1:], nil)
	require.NoError(t, <-slow, "the call in flight on the removed replica")
	r.push(nil, errors.New("registry down"))
	r.push([]string{}, nil)
	seen := map[string]int{}
	for range 10 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		seen[s]++
	}
	assert.Equal(t, map[string]int{"replica-1": 5, "replica-2": 5}, seen)
	r.push(f.addrs, nil)
	seen = map[string]int{}
	for range 9 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		seen[s]++
	}
	assert.Equal(t, map[string]int{"replica-0": 3, "replica-1": 3, "replica-2": 3}, seen)
}

// load calls Who.Am from n goroutines until stop is called, which returns
// the errors the calls met. Every call is bounded, so a hang shows as a
// deadline error.
func load(t *testing.T, c *dispatch.Client, n int) (stop func() []error) {
	return loadOf(t, c, n, 2*time.Millisecond)
}

// loadOf is load with calls whose handlers take pause.
func loadOf(t *testing.T, c *dispatch.Client, n int, pause time.Duration) (stop func() []error) {
	done := make(chan struct{})
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				_, err := whoAmI(ctx, c, pause)
				cancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	return func() []error {
		close(done)
		wg.Wait()
		return errs
	}
}

// Three mux replicas on distinct loopback addresses, under load: one is
// killed — no idempotent call is lost, and the calls it held of a method
// not marked idempotent fail with ErrShutdown, none hangs; it is restarted
// and used again; another is shut down gracefully — no caller sees an
// error.
func TestReplicasFailover(t *testing.T) {
	m := mux.New()
	defer m.Close()
	f := newFleet(t, m, 3, func(i int) string { return fmt.Sprintf("127.0.0.%d:0", i+2) })
	idem := f.dial(t, dispatch.WithIdempotent("Who.Am"), dispatch.WithEjection(2, 50*time.Millisecond))
	plain := f.dial(t, dispatch.WithEjection(2, 50*time.Millisecond))

	stopIdem := load(t, idem, 8)
	stopPlain := load(t, plain, 8)
	time.Sleep(100 * time.Millisecond)
	addr1 := f.addrs[1]
	f.srvs[1].Close()
	time.Sleep(200 * time.Millisecond)
	assert.Empty(t, stopIdem(), "idempotent calls lost when a replica was killed")
	for _, err := range stopPlain() {
		assert.ErrorIs(t, err, dispatch.ErrShutdown, "a call the killed replica held")
	}

	// Restarted at the same address, it is called again once its time
	// out ends.
	before := f.calls[1].Load()
	f.start(1, addr1)
	stopIdem = load(t, idem, 4)
	require.Eventually(t, func() bool { return f.calls[1].Load() > before+10 }, 10*time.Second, 5*time.Millisecond)
	assert.Empty(t, stopIdem())

	// A graceful Shutdown under load: calls in flight finish, calls it
	// turns away go elsewhere.
	stopPlain = load(t, plain, 8)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, f.srvs[0].Shutdown(t.Context()))
	time.Sleep(100 * time.Millisecond)
	assert.Empty(t, stopPlain(), "a caller saw the Shutdown of a replica")
}

// forward relays connections to addr from a new loopback listener, whose
// address it returns: a replica reached through it is remote to the
// shortcut, which knows only the addresses this process serves.
func forward(t *testing.T, addr string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
	return l.Addr().String()
}

// With the shortcut on, a replica served by this process takes the calls,
// with no socket, until it has WithLocalLimit calls in flight or is gone;
// the others take the overflow, and all calls when it is down.
func TestReplicasLocalFirst(t *testing.T) {
	tr := tcp.New()
	f := newFleet(t, tr, 3, func(int) string { return "127.0.0.1:0" })
	addrs := []string{forward(t, f.addrs[0]), f.addrs[1], forward(t, f.addrs[2])}
	var paths sync.Map
	c, err := dispatch.Dial(t.Context(), tr, "svc", dispatch.WithResolver(resolver.Static{Addrs: addrs}),
		dispatch.WithShortcut(dispatch.ShortcutCopy), dispatch.WithLocalLimit(4),
		dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
			err := next(ctx, args, reply)
			ci, _ := dispatch.CallInfoFrom(ctx)
			paths.Store(ci.Path, true)
			return err
		}))
	require.NoError(t, err)
	defer c.Close()
	for range 20 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		require.Equal(t, "replica-1", s)
	}
	_, network := paths.Load(dispatch.Path("tcp"))
	_, shortcut := paths.Load(dispatch.PathShortcutCopy)
	assert.True(t, shortcut && !network, "every call took the shortcut")
	for s, err := range dispatch.CallStream[int, string](t.Context(), c, "Who.Count", new(0)) {
		require.NoError(t, err)
		assert.Equal(t, "replica-1", *s)
	}

	// Saturated: four calls held, the rest go to the network.
	slowCtx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _, _ = whoAmI(slowCtx, c, time.Hour) })
	}
	require.Eventually(t, func() bool { return f.calls[1].Load() == 20+1+4 }, 10*time.Second, time.Millisecond)
	seen := map[string]int{}
	for range 10 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		seen[s]++
	}
	cancel()
	wg.Wait()
	assert.Zero(t, seen["replica-1"], "%v", seen)
	assert.Positive(t, seen["replica-0"], "%v", seen)
	assert.Positive(t, seen["replica-2"], "%v", seen)

	// Down: its address refuses, and the others take every call.
	f.srvs[1].Close()
	seen = map[string]int{}
	for range 10 {
		s, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
		seen[s]++
	}
	assert.Zero(t, seen["replica-1"])
	assert.Equal(t, 10, seen["replica-0"]+seen["replica-2"])
}

// loopback gives replica i an address of its own on loopback.
func loopback(i int) string { return fmt.Sprintf("127.0.0.%d:0", i+2) }

// kill ends replica i abruptly, as a SIGKILL would: its listener and its
// connections close at once, and the calls on them fail. It returns the
// replica's address, to start it again at.
func (f *replicaFleet) kill(i int) string {
	f.mu.Lock()
	srv, addr := f.srvs[i], f.addrs[i]
	f.mu.Unlock()
	require.NoError(f.t, srv.Close())
	return addr
}

// hold makes n calls of method on c, each held by its handler until ctx
// ends or the fleet's gate opens, and waits
// until replica i's handlers have begun them all: r, the Client's
// resolver, reports replica i alone meanwhile. wait returns the calls'
// errors once they are done.
func hold(t *testing.T, ctx context.Context, f *replicaFleet, r *pushResolver, c *dispatch.Client, i, n int, method string) (wait func() []error) {
	r.push(f.addrs[i:i+1], nil)
	before := f.calls[i].Load()
	errs := make(chan error, n)
	for range n {
		go func() {
			pause := time.Hour
			var s string
			errs <- c.Call(ctx, method, &pause, &s)
		}()
	}
	require.Eventually(t, func() bool { return f.calls[i].Load() == before+int64(n) }, 10*time.Second, time.Millisecond)
	return func() []error {
		var all []error
		for range n {
			all = append(all, <-errs)
		}
		return all
	}
}

// firstCallOn calls Who.Am on c, a call at a time, until replica i's
// handlers begin one, and returns when the call that reached it was begun,
// counted from since. It gives up, returning false, once 4 calls begun
// after by have gone elsewhere: round-robin sends one of every two calls
// to a replica that is in. Only the calls' beginnings are compared with
// by, so a slow machine makes the test slower, not wrong. A call may fail
// with ErrShutdown (over mux, the first after a peer's death can be opened
// on its session before the session is known dead); any other error fails
// the test.
func firstCallOn(t *testing.T, f *replicaFleet, c *dispatch.Client, i int, since, by time.Time) (time.Duration, bool) {
	before := f.calls[i].Load()
	missed := 0
	for {
		begun := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := whoAmI(ctx, c, 0)
		cancel()
		if !errors.Is(err, dispatch.ErrShutdown) {
			require.NoError(t, err)
		}
		if f.calls[i].Load() > before {
			return begun.Sub(since), true
		}
		if begun.After(by) {
			if missed++; missed == 4 {
				return begun.Sub(since), false
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// One outage of a replica is one ejection, however many calls it failed:
// with the default WithEjection (3 failures, 1 s), a replica killed with n
// calls in flight and started again at once at the same address takes the
// calls begun 1.1 s after the last of them failed — not only after 2, 8 or
// 30 s, as when each failed call doubled the time out. So does a replica
// that answered n calls CodeUnavailable together, as a draining one
// answers those it turns away.
func TestReplicaOutageIsOneEjection(t *testing.T) {
	in := dispatch.DefaultEjectFor + 100*time.Millisecond
	transports := map[string]func() transport.Transport{
		"mux": func() transport.Transport { return mux.New() },
		"tcp": func() transport.Transport { return tcp.New() },
	}
	// 6, 12 and 18 failed calls, which each doubled the time out before:
	// no fewer than the 3 failures that eject a killed replica.
	for _, n := range []int{6, 12, 18} {
		for _, how := range []string{"mux-killed", "tcp-killed", "mux-unavailable"} {
			t.Run(fmt.Sprint(how, "-", n), func(t *testing.T) {
				t.Parallel()
				tr := transports[how[:3]]()
				defer tr.Close()
				f := newFleet(t, tr, 2, loopback)
				r := &pushResolver{first: f.addrs}
				c, err := dispatch.Dial(t.Context(), tr, "svc", dispatch.WithResolver(r))
				require.NoError(t, err)
				defer c.Close()
				var wait func() []error
				var failed time.Time
				if how[4:] == "killed" {
					wait = hold(t, t.Context(), f, r, c, 0, n, "Who.Am")
					r.push(f.addrs, nil)
					failed = time.Now()
					f.start(0, f.kill(0))
					for _, err := range wait() {
						require.ErrorIs(t, err, dispatch.ErrShutdown)
					}
				} else {
					wait = hold(t, t.Context(), f, r, c, 0, n, "Who.Unavailable")
					failed = time.Now()
					close(f.gate)
					for _, err := range wait() {
						var e *dispatch.Error
						require.ErrorAs(t, err, &e)
						require.Equal(t, dispatch.CodeUnavailable, e.Code)
					}
					r.push(f.addrs, nil)
				}
				// Each failure was recorded before its Call returned.
				back, ok := firstCallOn(t, f, c, 0, failed, time.Now().Add(in))
				t.Logf("%s with %d calls in flight: called again after %v", how, n, back.Round(time.Millisecond))
				assert.True(t, ok, "calls begun %v after the last failure went elsewhere", in)
			})
		}
	}
}

// A graceful rolling restart under load: a replica shut down and started
// again at once at the same address takes calls again once the default
// time out (1 s) is over, and no caller sees an error.
func TestReplicaRollingRestartIsOneEjection(t *testing.T) {
	m := mux.New()
	defer m.Close()
	f := newFleet(t, m, 2, loopback)
	c := f.dial(t)
	stop := loadOf(t, c, 16, 50*time.Millisecond) // the drain takes up to 50 ms
	time.Sleep(150 * time.Millisecond)
	addr := f.addrs[0]
	shut := time.Now()
	require.NoError(t, f.srvs[0].Shutdown(t.Context()))
	f.start(0, addr)
	// Left out at its first refusal, before Shutdown returned.
	back, ok := firstCallOn(t, f, c, 0, shut, time.Now().Add(dispatch.DefaultEjectFor+100*time.Millisecond))
	t.Logf("called again %v after its Shutdown began", back.Round(time.Millisecond))
	assert.True(t, ok, "calls begun 1.1 s after the restart went elsewhere")
	assert.Empty(t, stop(), "a caller saw the restart")
}

// A call begun before a replica was left out and answered after says
// nothing of the replica since: as a draining replica answers the calls it
// holds while it turns new ones away, its success does not let the
// replica back in before its time out is over.
func TestReplicaStaleSuccessKeepsItOut(t *testing.T) {
	const d = 500 * time.Millisecond
	m := mux.New()
	defer m.Close()
	f := newFleet(t, m, 2, loopback)
	r := &pushResolver{first: f.addrs}
	c, err := dispatch.Dial(t.Context(), m, "svc", dispatch.WithResolver(r), dispatch.WithEjection(3, d))
	require.NoError(t, err)
	defer c.Close()
	r.push(f.addrs[:1], nil)
	answered := make(chan error, 1)
	go func() {
		pause := 300 * time.Millisecond // not held by the gate: answered after the refusal
		var s string
		answered <- c.Call(t.Context(), "Who.Am", &pause, &s)
	}()
	require.Eventually(t, func() bool { return f.calls[0].Load() == 1 }, 10*time.Second, time.Millisecond)
	refused := hold(t, t.Context(), f, r, c, 0, 1, "Who.Unavailable")
	ejected := time.Now()
	close(f.deny)
	for _, err := range refused() {
		var e *dispatch.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, dispatch.CodeUnavailable, e.Code)
	}
	require.NoError(t, <-answered)
	r.push(f.addrs, nil)
	back, ok := firstCallOn(t, f, c, 0, ejected, time.Now().Add(d+100*time.Millisecond))
	t.Logf("called again after %v", back.Round(time.Millisecond))
	require.True(t, ok, "not called again")
	assert.GreaterOrEqual(t, back, d*9/10, "let back in by the success of a call begun before it was left out")
}

// The time out doubles when a replica fails again after it was let back
// in: killed and still down when its time is up, a replica whose dials are
// refused is out again for twice as long. The replica starts again once
// the third refused dial (the second ejection) is seen, not at a set time,
// so that a slow machine cannot let it back in before.
func TestReplicaEjectionDoubles(t *testing.T) {
	const d = 300 * time.Millisecond
	m := mux.New()
	defer m.Close()
	f := newFleet(t, m, 2, loopback)
	r := &pushResolver{first: f.addrs}
	tr := &refusals{Transport: m, addr: f.addrs[0], at: make(chan time.Time, 1000)}
	c, err := dispatch.Dial(t.Context(), tr, "svc", dispatch.WithResolver(r), dispatch.WithEjection(3, d))
	require.NoError(t, err)
	defer c.Close()
	wait := hold(t, t.Context(), f, r, c, 0, 6, "Who.Am")
	r.push(f.addrs, nil)
	killed := time.Now()
	addr := f.kill(0)
	wait()
	// Out for d; let back in, its dials are refused, and the third ejects
	// it again: out for 2 d.
	stop := load(t, c, 2)
	var second time.Time
	for i := range 3 {
		second = recv(t, tr.at, waitLong, "a refused dial")
		t.Logf("dial %d refused %v after the kill", i+1, second.Sub(killed).Round(time.Millisecond))
	}
	f.start(0, addr)
	back, ok := firstCallOn(t, f, c, 0, second, time.Now().Add(10*d))
	assert.Empty(t, stop(), "refused dials are retried on the other replica")
	t.Logf("called again %v after the second ejection", back.Round(time.Millisecond))
	require.True(t, ok, "not called again")
	assert.GreaterOrEqual(t, back, 2*d*9/10, "out for 2 d after the second ejection (d without the doubling)")
}

// refusals is a mux Transport that reports when a dial to addr is refused.
type refusals struct {
	*mux.Transport
	addr string
	at   chan time.Time
}

func (r *refusals) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	s, err := r.Transport.Dial(ctx, addr)
	if addr == r.addr && errors.Is(err, transport.ErrConnectionRefused) {
		select {
		case r.at <- time.Now():
		default:
		}
	}
	return s, err
}

// The death of one replica of three under 64 callers of an idempotent
// method loses no call with the default retry budget: the calls it held
// are retried on the others.
func TestReplicaDeathUnderLoadLosesNoCall(t *testing.T) {
	for name, tr := range map[string]transport.Transport{"mux": mux.New(), "tcp": tcp.New()} {
		t.Run(name, func(t *testing.T) {
			defer tr.Close()
			f := newFleet(t, tr, 3, loopback)
			c := f.dial(t, dispatch.WithIdempotent("Who.Am"))
			stop := load(t, c, 64)
			time.Sleep(200 * time.Millisecond)
			f.kill(1)
			time.Sleep(200 * time.Millisecond)
			errs := stop()
			assert.Empty(t, errs, "%d calls lost", len(errs))
		})
	}
}

// Calls refused before any handler could run — a refused dial, an
// admission refusal, a Server shutting down — are retried elsewhere for
// free: they leave the retry budget whole for the calls that may have
// reached a handler. A budget of 4 with nothing given back then saves one
// of three calls in flight on a replica that dies, and only one.
func TestRefusalsLeaveTheRetryBudget(t *testing.T) {
	m := mux.New()
	defer m.Close()
	// 0 dies, 1 serves, 2 shuts down; one admits one call at a time.
	f := newFleet(t, m, 3, loopback)
	one := newFleet(t, m, 1, func(int) string { return "127.0.0.8:0" }, dispatch.WithMaxCallsPerConn(1))
	l, err := net.Listen("tcp", "127.0.0.9:0")
	require.NoError(t, err)
	dead := l.Addr().String()
	require.NoError(t, l.Close())
	r := &pushResolver{first: []string{dead, f.addrs[1]}}
	c, err := dispatch.Dial(t.Context(), m, "svc", dispatch.WithResolver(r), dispatch.WithIdempotent("Who.Am"),
		dispatch.WithRetryBudget(dispatch.RetryBudget{Max: 4, Ratio: 0}))
	require.NoError(t, err)
	defer c.Close()
	callTwice := func() {
		t.Helper()
		for range 2 { // round-robin: one of them goes first to the other replica
			s, err := whoAmI(t.Context(), c, 0)
			require.NoError(t, err)
			require.Equal(t, "replica-1", s)
		}
	}

	// Refused dials, until the dead address is left out.
	for range 3 {
		callTwice()
	}

	// A Server shutting down: another client's call keeps it draining, and
	// this Client's connection to it is told so.
	r.push([]string{f.addrs[2], f.addrs[1]}, nil)
	for f.calls[2].Load() == 0 { // a call on replica 2: a connection
		_, err := whoAmI(t.Context(), c, 0)
		require.NoError(t, err)
	}
	m2 := mux.New() // a session of its own
	defer m2.Close()
	other, err := dispatch.Dial(t.Context(), m2, f.addrs[2])
	require.NoError(t, err)
	defer other.Close()
	held, release := context.WithCancel(t.Context())
	heldDone := make(chan error, 1)
	go func() { _, err := whoAmI(held, other, time.Hour); heldDone <- err }()
	require.Eventually(t, func() bool { return f.calls[2].Load() == 2 }, 10*time.Second, time.Millisecond)
	shut := make(chan error, 1)
	go func() { shut <- f.srvs[2].Shutdown(t.Context()) }()
	require.Eventually(t, func() bool {
		_, err := whoAmI(t.Context(), other, 0)
		var e *dispatch.Error
		return errors.As(err, &e) && e.Code == dispatch.CodeUnavailable
	}, 10*time.Second, time.Millisecond)
	callTwice()
	release()
	<-heldDone
	require.NoError(t, <-shut)

	// An admission refusal: a connection with its one call in flight.
	held, release = context.WithCancel(t.Context())
	wait := hold(t, held, one, r, c, 0, 1, "Who.Am")
	r.push([]string{one.addrs[0], f.addrs[1]}, nil)
	callTwice()
	release()
	wait()

	// A replica dies with three calls in flight: the budget (4 tokens, a
	// retry while more than 2 are left) retries the first to fail, and
	// only it.
	wait = hold(t, t.Context(), f, r, c, 0, 3, "Who.Am")
	r.push(f.addrs[:2], nil)
	f.kill(0)
	close(f.gate) // the retry is not held
	ok, lost := tallyLost(t, wait())
	assert.Equal(t, 1, ok, "calls retried")
	assert.Equal(t, 2, lost, "calls the budget did not retry")
}

// Calls that fail together are each judged on the tokens their own failure
// left, however their failures interleave. The resolver's Refresh, which a
// call makes when its connection fails, returns only once all three calls
// have failed: every call's take is made before any later step, as a busy
// machine's scheduler may order them. A budget of 4 still retries the first
// of 3 (a judgement made after the others' takes would retry none).
func TestCallsFailingTogetherAreJudgedOnTheirOwnTakes(t *testing.T) {
	m := mux.New()
	defer m.Close()
	f := newFleet(t, m, 2, loopback)
	r := &pushResolver{first: f.addrs}
	c, err := dispatch.Dial(t.Context(), m, "svc", dispatch.WithResolver(r), dispatch.WithIdempotent("Who.Am"),
		dispatch.WithRetryBudget(dispatch.RetryBudget{Max: 4, Ratio: 0}))
	require.NoError(t, err)
	defer c.Close()

	wait := hold(t, t.Context(), f, r, c, 0, 3, "Who.Am")
	var failed atomic.Int64
	all := make(chan struct{})
	r.setRefresh(func() {
		if failed.Add(1) == 3 {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
	})
	r.push(f.addrs, nil)
	f.kill(0)
	close(f.gate) // the retry is not held
	ok, lost := tallyLost(t, wait())
	assert.EqualValues(t, 3, failed.Load(), "calls failed mid-call")
	assert.Equal(t, 1, ok, "calls retried")
	assert.Equal(t, 2, lost, "calls the budget did not retry")
}

// tallyLost counts the calls of errs that succeeded and those lost with
// their replica (ErrShutdown, which it asserts).
func tallyLost(t *testing.T, errs []error) (ok, lost int) {
	t.Helper()
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			assert.ErrorIs(t, err, dispatch.ErrShutdown)
			lost++
		}
	}
	return ok, lost
}

// Closing a Client of replicas ends the ReplicaCheck under way, however
// long it may run (its bound is an hour here): Close waits for the checks
// to stop, and must not wait the check out.
func TestReplicaCheckEndsAtClose(t *testing.T) {
	f := newFleet(t, memory.New(), 2, func(int) string { return "" })
	entered := make(chan struct{}, 1)
	var checks atomic.Int64
	check := func(ctx context.Context, c *dispatch.Client) error {
		checks.Add(1)
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
	c, err := dispatch.Dial(t.Context(), f.tr, f.target(), dispatch.WithResolver(resolver.Default), dispatch.WithReplicaCheck(check, time.Hour))
	require.NoError(t, err)
	recv(t, entered, waitLong, "the first ReplicaCheck")
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	require.NoError(t, recv(t, closed, waitLong, "Close, with a ReplicaCheck under way"))
	assert.EqualValues(t, 1, checks.Load(), "no check begins once the Client is closing")
}
