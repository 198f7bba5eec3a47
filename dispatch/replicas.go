package dispatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/signal"
	"github.com/zerodial/transport/resolver"
)

// replicaSet is what a Client of replicas (WithResolver) calls through: the
// replicas its resolver reports, each a Client of one address, and the
// state that chooses between them.
type replicaSet struct {
	tr     transport.Transport
	target string
	opts   replicaOptions
	sub    clientOptions // each replica's Client's: no interceptors, no resolver
	watch  resolver.Watch
	budget retryBudget
	rr     atomic.Uint64

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
	unfit    atomic.Bool // its last ReplicaCheck failed
	removed  atomic.Bool // no longer reported: closed once idle
}

// replicaHealth is what the outcomes of a replica's calls say of it:
// whether it is left out, and until when. One outage is one ejection: the
// calls one broken connection or one drain fails together, and those
// refused while the replica is out, must not each eject it again (each
// ejection in a row doubles the time out). So an outcome counts only for what the replica
// has done since its last ejection: a failure only if its call was begun
// while the replica was in (at or after the end of its last time out), a
// success only if its call was begun after the last ejection. A call's
// beginning is the time its replica was picked (monoNow).
type replicaHealth struct {
	out   atomic.Int64 // left out until this time; in from then on
	clean atomic.Bool  // nothing to forget: a success changes nothing

	mu      sync.Mutex // orders the changes below, and of out
	since   int64      // the time of the last ejection
	fails   int        // transport failures in a row while in
	ejected int        // ejections since the last success
}

// monoNow is the time on the monotonic clock, in nanoseconds: a change of
// the wall clock moves no time out.
func monoNow() int64 { return int64(time.Since(monoEpoch)) }

var monoEpoch = time.Now()

// failed records the failure of a call begun at begun; atOnce ejects at
// the first (a replica shutting down), otherwise it takes after failures
// in a row. The time out is d, doubled at each ejection since the last
// success, up to 30 d: 1, 2, 4, 8, 16, then 30 times.
func (h *replicaHealth) failed(begun int64, atOnce bool, after int, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if begun < h.out.Load() {
		return // begun before its time out ended: the outage is counted
	}
	h.clean.Store(false)
	h.fails++
	if !atOnce && h.fails < after {
		return
	}
	n := min(h.ejected, 5)
	h.ejected++
	h.fails = 0
	h.since = monoNow()
	h.out.Store(h.since + int64(min(d<<n, 30*d)))
}

// succeeded records the success of a call begun at begun: the replica is
// in, and its failures are forgotten — unless the call was begun before
// the last ejection, when it says nothing of the replica since.
func (h *replicaHealth) succeeded(begun int64) {
	if h.clean.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if begun < h.since {
		return
	}
	h.fails, h.ejected = 0, 0
	if now := monoNow(); h.out.Load() > now {
		h.out.Store(now) // it answered while out (no other was left): in
	}
	h.clean.Store(true)
}

// dialReplicas is Dial for a Client of replicas.
func dialReplicas(ctx context.Context, tr transport.Transport, target string, o clientOptions) (*Client, error) {
	sub := o
	sub.interceptors, sub.streamInterceptors = nil, nil
	sub.replicas = replicaOptions{}
	s := &replicaSet{tr: tr, target: target, opts: o.replicas, sub: sub}
	s.budget.init(o.replicas.budget)
	s.list.Store(&[]*replica{})
	c := newAddrClient(tr, target, o, s)
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
		r := &replica{addr: a, c: newAddrClient(s.tr, a, s.sub, nil)}
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

// usable reports whether r may be chosen at now (monoNow).
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
// at now (monoNow). nil means there is none left to try.
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

// try runs attempt on a replica that pick chooses, then, as its failure
// allows, on others: always when it cannot have reached a handler, and
// when it may have, only for an idempotent call within the budget. It
// returns the last attempt's error, or why there was no replica to try.
func (s *replicaSet) try(ctx context.Context, idempotent bool, attempt func(r *replica) error) error {
	var triedBuf [4]*replica
	tried := triedBuf[:0]
	var last error
	for {
		begun := monoNow()
		r := s.pick(tried, begun)
		if r == nil {
			if last == nil {
				last = s.noReplicas()
			}
			return last
		}
		err := attempt(r)
		retry := s.outcome(r, begun, err)
		if err == nil {
			return nil
		}
		last = err
		if ctx.Err() != nil {
			return err
		}
		switch retry {
		case retryNever:
			return err
		case retryIfIdempotent:
			if !idempotent {
				return err
			}
		}
		tried = append(tried, r)
	}
}

// attempt makes the call on r.
func (s *replicaSet) attempt(ctx context.Context, r *replica, name string, args, reply any, info *CallInfo) error {
	r.begin()
	defer r.end()
	return r.c.call(ctx, name, args, reply, info)
}

// What a failed attempt allows.
type retryKind int

const (
	retryNever        retryKind = iota // the handler answered, the caller gave up, or the budget is spent
	retryIfIdempotent                  // the call may have reached a handler, and the budget allows
	retryAlways                        // the call cannot have reached a handler
)

// outcome records how an attempt on r, begun at begun, went and says
// whether the call may be tried on another replica. Only a failure that
// may have reached a handler takes from the retry budget, and may be
// retried only if the tokens its own take left allow it: the retry of one
// that cannot have is free (as gRPC's transparent retries are), and at
// most one on each replica.
func (s *replicaSet) outcome(r *replica, begun int64, err error) retryKind {
	if err == nil {
		s.succeeded(r, begun)
		return retryNever
	}
	var de *dialError
	if errors.As(err, &de) || err == ErrShutdown && r.removed.Load() {
		// Nothing was sent: the dial failed, or the replica left the set
		// (and its Client closed) between the pick and the call.
		s.failed(r, begun, false)
		return retryAlways
	}
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Code == CodeUnavailable:
			// Shutting down (or a handler saying it cannot serve now):
			// leave it out at once, and go elsewhere.
			s.failed(r, begun, true)
			return retryAlways
		case isAdmissionRefusal(e):
			return retryAlways
		case e.Code == CodeCanceled || e.Code == CodeDeadlineExceeded:
			return retryNever
		}
		s.succeeded(r, begun) // the replica answered: it is fit
		return retryNever
	}
	if errors.Is(err, ErrNilReply) {
		return retryNever
	}
	// The connection failed with the call on it.
	allowed := s.budget.failed()
	s.failed(r, begun, false)
	if !allowed {
		return retryNever
	}
	return retryIfIdempotent
}

func (s *replicaSet) succeeded(r *replica, begun int64) {
	s.budget.succeeded()
	r.health.succeeded(begun)
}

func (s *replicaSet) failed(r *replica, begun int64, atOnce bool) {
	if !atOnce {
		if w := s.currentWatch(); w != nil {
			w.Refresh() // the set may have changed
		}
	}
	r.health.failed(begun, atOnce, s.opts.ejectAfter, s.opts.ejectFor)
}

func (s *replicaSet) currentWatch() resolver.Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watch
}

// retryBudget is RetryBudget's state: tokens in thousandths.
type retryBudget struct {
	tokens     atomic.Int64
	max, ratio int64
}

func (b *retryBudget) init(c RetryBudget) {
	b.max, b.ratio = int64(c.Max*1000), int64(c.Ratio*1000)
	b.tokens.Store(b.max)
}

// failed takes a token for a failed call and reports whether its retry may
// be made: more than half the tokens are left after its take. Taking and
// judging are one step, so that calls failing together are judged on the
// tokens each left, not on what the others took meanwhile: of N calls that
// fail together on a full budget, the first ⌈Max/2⌉−1 are retried, however
// their failures interleave.
func (b *retryBudget) failed() (retry bool) {
	for {
		t := b.tokens.Load()
		left := max(t-1000, 0)
		if t <= 0 || b.tokens.CompareAndSwap(t, left) {
			return left > b.max/2
		}
	}
}

func (b *retryBudget) succeeded() {
	for {
		t := b.tokens.Load()
		if t >= b.max || b.tokens.CompareAndSwap(t, min(t+b.ratio, b.max)) {
			return
		}
	}
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
			r.unfit.Store(err != nil)
		}
		select {
		case <-s.closed.Signal():
			return
		case <-t.C:
		}
	}
}
