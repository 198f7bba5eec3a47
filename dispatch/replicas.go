package dispatch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport/internal/signal"
	"github.com/zerodial/transport/resolver"
)

// replicaSet is what a Client of replicas (WithResolver) calls through: the
// replicas its resolver reports, each a Client of one address, and the
// state that chooses between them.
type replicaSet struct {
	dialer connDialer
	target string
	opts   replicaOptions
	sub    clientOptions // each replica's Client's: no interceptors, no resolver
	watch  resolver.Watch
	budget retryBudget
	rr     atomic.Uint64
	clock  monoClock // the time of the replicas' health

	list atomic.Pointer[[]*replica] // the current replicas, replaced whole

	mu      sync.Mutex
	closed  signal.Signal // set by close, under mu
	lastErr error         // the resolver's last error, while it has no set
	ready   signal.Signal // set at the first report
	// checking ends the ReplicaCheck under way: close calls it, having set
	// closed, after which no check begins.
	checking context.CancelFunc
	checker  sync.WaitGroup
}

// replica is one address of a replicaSet.
type replica struct {
	addr     string
	c        *Client
	inflight atomic.Int64
	health   replicaHealth
	unfit    atomic.Bool           // its last ReplicaCheck failed
	checkErr atomic.Pointer[error] // what its last failed ReplicaCheck said
	removed  atomic.Bool           // no longer reported: closed once idle
}

// dialReplicas is Dial for a Client of replicas.
func dialReplicas(ctx context.Context, d connDialer, target string, o clientOptions) (*Client, error) {
	sub := o
	sub.interceptors, sub.streamInterceptors = nil, nil
	sub.replicas = replicaOptions{}
	s := &replicaSet{dialer: d, target: target, opts: o.replicas, sub: sub, clock: newMonoClock()}
	s.budget.init(o.replicas.budget)
	s.list.Store(&[]*replica{})
	c := newAddrClient(d, target, o, s)
	w, err := o.replicas.resolver.Resolve(target, s.update)
	if err != nil {
		return nil, fmt.Errorf("dispatch: resolving %s: %w", target, err)
	}
	s.mu.Lock()
	s.watch = w
	s.mu.Unlock()
	select {
	case <-s.ready.Signal():
	case <-ctx.Done():
		c.Close()
		return nil, ctxError(ctx)
	}
	if len(*s.list.Load()) == 0 {
		err := s.noReplicas()
		c.Close()
		return nil, err
	}
	if o.replicas.check != nil {
		s.checker.Add(1)
		go s.checkLoop()
	}
	return c, nil
}

// update is the resolver's report: a new set of addresses, or an error.
func (s *replicaSet) update(addrs []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.IsSet() {
		return
	}
	defer s.ready.Set(nil)
	if err != nil {
		s.lastErr = err
		return
	}
	if len(addrs) == 0 {
		// An empty set is more likely a fault of the resolver than a
		// service with no replicas: keep calling the last ones.
		s.lastErr = resolver.ErrNoAddresses
		return
	}
	s.lastErr = nil
	old := *s.list.Load()
	next := make([]*replica, 0, len(addrs))
	for _, a := range addrs {
		if slices.ContainsFunc(next, func(r *replica) bool { return r.addr == a }) {
			continue
		}
		i := slices.IndexFunc(old, func(r *replica) bool { return r.addr == a })
		if i >= 0 {
			next = append(next, old[i])
			continue
		}
		r := &replica{addr: a, c: newAddrClient(s.dialer, a, s.sub, nil)}
		r.health.clean.Store(true)
		next = append(next, r)
	}
	s.list.Store(&next)
	for _, r := range old {
		if !slices.Contains(next, r) {
			r.removed.Store(true)
			if r.inflight.Load() == 0 {
				r.c.Close()
			}
		}
	}
}

// noReplicas is the error of a call that found no replica to try.
func (s *replicaSet) noReplicas() error {
	s.mu.Lock()
	err := s.lastErr
	s.mu.Unlock()
	if err == nil {
		err = resolver.ErrNoAddresses
	}
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf("dispatch: no replica of %s to call: %v", s.target, err)}
}

func (s *replicaSet) close() {
	s.mu.Lock()
	if !s.closed.Set(ErrShutdown) {
		s.mu.Unlock()
		return
	}
	w, checking := s.watch, s.checking
	s.mu.Unlock()
	if checking != nil {
		checking()
	}
	if w != nil {
		w.Close()
	}
	s.checker.Wait()
	for _, r := range *s.list.Load() {
		r.c.Close()
	}
}

// begin counts a call on r; end counts it out, closing r if it was
// removed meanwhile and this was its last call.
func (r *replica) begin() { r.inflight.Add(1) }

func (r *replica) end() {
	if r.inflight.Add(-1) == 0 && r.removed.Load() {
		r.c.Close()
	}
}

// usable reports whether r may be chosen at now (monoClock.now).
func (r *replica) usable(now int64) bool {
	return !r.unfit.Load() && now >= r.health.out.Load()
}

// isLocal reports whether r is served by this process and its Client
// would take the shortcut.
func (r *replica) isLocal() bool {
	c := r.c
	return c.opts.shortcut != ShortcutOff && shortcuts.lookupCached(c.key, c.wire, &c.found) != nil
}

// pick chooses the replica of the next attempt of a call, none of tried,
// at now (monoClock.now). nil means there is none left to try.
func (s *replicaSet) pick(tried []*replica, now int64) *replica {
	list := *s.list.Load()
	// A local replica at its limit is skipped while others are usable:
	// the overflow goes to them.
	var saturated *replica
	if s.opts.localLimit > 0 && s.sub.shortcut != ShortcutOff {
		for _, r := range list {
			if !r.isLocal() || !r.usable(now) || slices.Contains(tried, r) {
				continue
			}
			if r.inflight.Load() < int64(s.opts.localLimit) {
				return r
			}
			saturated = r
		}
	}
	if saturated != nil {
		tried = append(tried[:len(tried):len(tried)], saturated)
	}
	switch s.opts.balancer {
	case LeastLoaded:
		if r := s.twoChoices(list, tried, now); r != nil {
			return r
		}
	default:
		n := uint64(len(list))
		start := s.rr.Add(1)
		for i := range n {
			r := list[(start+i)%n]
			if r.usable(now) && !slices.Contains(tried, r) {
				return r
			}
		}
	}
	if saturated != nil && saturated.usable(now) {
		return saturated // the only one left
	}
	// Every replica not yet tried is left out: rather than fail the call
	// unheard, try the one whose time out ends first — it may be back.
	var best *replica
	for _, r := range list {
		if slices.Contains(tried, r) || r.removed.Load() {
			continue
		}
		if best == nil || r.health.out.Load() < best.health.out.Load() {
			best = r
		}
	}
	return best
}

// twoChoices picks two usable replicas, none of tried, at random and
// returns the one with fewer calls in flight.
func (s *replicaSet) twoChoices(list, tried []*replica, now int64) *replica {
	var buf [8]*replica
	cands := buf[:0]
	for _, r := range list {
		if r.usable(now) && !slices.Contains(tried, r) {
			cands = append(cands, r)
		}
	}
	switch len(cands) {
	case 0:
		return nil
	case 1:
		return cands[0]
	}
	i := rand.IntN(len(cands))
	j := rand.IntN(len(cands) - 1)
	if j >= i {
		j++
	}
	a, b := cands[i], cands[j]
	if b.inflight.Load() < a.inflight.Load() {
		return b
	}
	return a
}

// call makes a call on the replicas.
func (s *replicaSet) call(ctx context.Context, name string, args, reply any, info *CallInfo) error {
	return s.try(ctx, s.opts.idempotent[name], func(r *replica) error {
		if info != nil {
			info.RemoteAddr = r.c.remote
		}
		return s.attempt(ctx, r, name, args, reply, info)
	})
}

// attempt makes the call on r.
func (s *replicaSet) attempt(ctx context.Context, r *replica, name string, args, reply any, info *CallInfo) error {
	r.begin()
	defer r.end()
	return r.c.call(ctx, name, args, reply, info)
}

func (s *replicaSet) currentWatch() resolver.Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watch
}

// checkContext returns the context of one ReplicaCheck, which ends after
// checkEvery or when the set closes; nil once it has closed.
func (s *replicaSet) checkContext() (context.Context, context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.IsSet() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.checkEvery)
	s.checking = cancel
	return ctx, cancel
}

// checkLoop runs the ReplicaCheck on every replica every checkEvery.
func (s *replicaSet) checkLoop() {
	defer s.checker.Done()
	t := time.NewTicker(s.opts.checkEvery)
	defer t.Stop()
	for {
		for _, r := range *s.list.Load() {
			ctx, cancel := s.checkContext()
			if ctx == nil {
				return
			}
			err := s.opts.check(ctx, r.c)
			cancel()
			s.checked(r, err)
		}
		select {
		case <-s.closed.Signal():
			return
		case <-t.C:
		}
	}
}
