package dispatch

import (
	"context"
	"errors"
	"sync/atomic"
)

// try runs attempt on a replica that pick chooses, then, as its failure
// allows, on others: always when it cannot have reached a handler, and
// when it may have, only for an idempotent call within the budget. It
// returns the last attempt's error, or why there was no replica to try.
func (s *replicaSet) try(ctx context.Context, idempotent bool, attempt func(r *replica) error) error {
	var triedBuf [4]*replica
	tried := triedBuf[:0]
	var last error
	for {
		begun := s.clock.now()
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
	if errors.As(err, &de) {
		// Nothing was sent: the dial failed. The replica's state says so
		// in the dial's words, which name the address, not the call.
		s.failed(r, begun, false, de)
		return retryAlways
	}
	if unnamed(err) == ErrShutdown && r.removed.Load() {
		// Nothing was sent: the replica left the set (and its Client
		// closed) between the pick and the call.
		s.failed(r, begun, false, err)
		return retryAlways
	}
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Code == CodeUnavailable:
			// Shutting down (or a handler saying it cannot serve now):
			// leave it out at once, and go elsewhere.
			s.failed(r, begun, true, err)
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
	s.failed(r, begun, false, err)
	if !allowed {
		return retryNever
	}
	return retryIfIdempotent
}

func (s *replicaSet) succeeded(r *replica, begun int64) {
	s.budget.succeeded()
	if r.health.succeeded(&s.clock, begun) {
		s.log().Info("dispatch: replica readmitted: a call succeeded after its ejection", "target", s.target, "replica", r.addr)
	}
}

func (s *replicaSet) failed(r *replica, begun int64, atOnce bool, err error) {
	if !atOnce {
		if w := s.currentWatch(); w != nil {
			w.Refresh() // the set may have changed
		}
	}
	if out := r.health.failed(&s.clock, begun, atOnce, s.opts.ejectAfter, s.opts.ejectFor, err); out > 0 {
		s.log().Info("dispatch: replica ejected", "target", s.target, "replica", r.addr, "for", out, "err", err)
	}
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
