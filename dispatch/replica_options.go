package dispatch

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/zerodial/transport/resolver"
)

// replicaOptions configure a Client of replicas (WithResolver).
type replicaOptions struct {
	resolver   resolver.Resolver
	balancer   Balancer
	localLimit int
	idempotent map[string]bool
	ejectAfter int
	ejectFor   time.Duration
	check      ReplicaCheck
	checkEvery time.Duration
	budget     RetryBudget
}

func defaultReplicaOptions() replicaOptions {
	return replicaOptions{balancer: RoundRobin, localLimit: DefaultLocalLimit, ejectAfter: DefaultEjectAfter,
		ejectFor: DefaultEjectFor, budget: DefaultRetryBudget}
}

// WithResolver makes Dial's address a target that r resolves to a set of
// replicas, and the Client one over all of them: each call goes to one
// replica, chosen by the Balancer (WithBalancer), with the same Call, Go
// and streaming API as a Client of one address. The Client follows the
// set as r reports it; Dial returns once r has reported a first set (or
// fails with r's error, or ctx's), and opens connections as calls need
// them. resolver.Default understands "dns:///name:port" and
// "static:///a:1,b:2".
//
// A replica that fails WithEjection's number of calls in a row — failures
// of the transport, not errors of its handlers — is left out for a while;
// one shutting down (CodeUnavailable) is left out at once. One outage is
// one ejection: the calls it failed together count once. A call that
// fails before it can have reached a handler (the dial failed, the replica
// was shutting down, it had too many calls) is tried once on each other
// replica, for free; one that may have reached a handler (the connection
// failed meanwhile) is tried again only for a method named in
// WithIdempotent, and only while the RetryBudget allows. The caller's
// context bounds it all.
//
// With WithShortcut, a replica served by this process is called first, with
// no socket, while it has fewer than WithLocalLimit calls in flight.
//
// Client.Replicas tells which replicas the Client has, which are out, until
// when and why; ejections and readmissions are logged at Info (WithLogger).
func WithResolver(r resolver.Resolver) ClientOption {
	return clientOption(func(o *clientOptions) {
		if r == nil {
			o.problems.Refuse("WithResolver(nil)", "no resolver")
			return
		}
		o.replicas.resolver = r
	})
}

// targetError refuses a target that names one of resolver.Default's
// schemes ("static:///a:1,b:2", "dns:///name:port") given to fn, a Client's
// constructor, without WithResolver: dialled as an address it would fail
// deep inside the transport ("too many colons in address") or, on the
// memory transport, with no listener found, neither of which says what is
// missing. nil for any other address.
func targetError(fn, addr string) error {
	scheme, _, ok := resolver.SplitTarget(addr)
	if !ok || resolver.Default[scheme] == nil {
		return nil
	}
	return fmt.Errorf("dispatch: %s %q: the target has the resolver scheme %q, but no resolver was given: "+
		"pass dispatch.WithResolver(resolver.Default) to call the replicas it names", fn, addr, scheme)
}

// Balancer chooses which replica a call goes to.
type Balancer int

const (
	// RoundRobin takes the replicas in turn.
	RoundRobin Balancer = iota
	// LeastLoaded picks two replicas at random and takes the one with
	// fewer calls in flight (the power of two choices): it steers calls
	// away from a slow replica without the herd that always choosing the
	// least loaded one would make.
	LeastLoaded
)

func (b Balancer) String() string {
	switch b {
	case RoundRobin:
		return "round-robin"
	case LeastLoaded:
		return "least-loaded"
	}
	return "Balancer(?)"
}

// WithBalancer sets how a Client of replicas (WithResolver) chooses the
// replica of each call; RoundRobin by default.
func WithBalancer(b Balancer) ClientOption {
	return clientOption(func(o *clientOptions) {
		if b != RoundRobin && b != LeastLoaded {
			o.problems.Invalid("WithBalancer", int(b), "no such balancer")
			return
		}
		o.replicas.balancer = b
	})
}

// DefaultLocalLimit is how many calls a Client of replicas (WithResolver)
// with the shortcut on has in flight to a replica served by this process
// before it sends more to the others, unless WithLocalLimit says otherwise.
const DefaultLocalLimit = 256

// WithLocalLimit sets how many calls a Client of replicas sends at once to
// a replica served in this process (which WithShortcut calls with no
// socket) before it balances the overflow over the other replicas. 0
// treats the local replica as any other. n must not be negative.
func WithLocalLimit(n int) ClientOption {
	return clientOption(func(o *clientOptions) {
		if n < 0 {
			o.problems.Invalid("WithLocalLimit", n, "must not be negative")
			return
		}
		o.replicas.localLimit = n
	})
}

// WithIdempotent names methods ("Service.Method") that may run twice with
// the effect of once: a Client of replicas retries a call of one of them
// on another replica even when it may have reached a handler (its
// connection failed mid-call), within the RetryBudget. A name not of that
// form (a method without its service, a service alone) would match no
// call, so it is refused rather than ignored.
func WithIdempotent(methods ...string) ClientOption {
	return clientOption(func(o *clientOptions) {
		if o.replicas.idempotent == nil {
			o.replicas.idempotent = map[string]bool{}
		}
		for _, m := range methods {
			if !isMethodName(m) {
				o.problems.Refuse(fmt.Sprintf("WithIdempotent(%q)", m),
					`not a method's full name: name it "Service.Method", as calls do`)
				continue
			}
			o.replicas.idempotent[m] = true
		}
	})
}

// isMethodName reports whether name is of the form "Service.Method", as
// the router requires of what it registers.
func isMethodName(name string) bool {
	dot := strings.LastIndex(name, ".")
	return dot > 0 && dot < len(name)-1
}

// The defaults of WithEjection.
const (
	DefaultEjectAfter = 3
	DefaultEjectFor   = time.Second
)

// maxEjectFor bounds WithEjection's time, so that the longest time out a
// replica gets, d doubled five times (d<<5 ≥ 30 d), fits a Duration.
const maxEjectFor = time.Duration(math.MaxInt64 / 32)

// WithEjection sets when a Client of replicas leaves a replica out:
// after failures calls in a row failed in its transport (a refused dial,
// a connection that failed; handler errors do not count), for d. A replica
// left out is tried again when its time is up, and when no other is left.
// One outage is one ejection: the failures of calls begun before the time
// out ended — the other calls one broken connection or one drain failed,
// those tried on it while it was out — do not count. The time doubles at
// each ejection that follows another without a success between them
// (the replica was let back in and failed again), up to 30 d. failures
// must be at least 1, and d positive and at most math.MaxInt64/32 ns
// (about 9 years), so that the longest time out fits a Duration.
func WithEjection(failures int, d time.Duration) ClientOption {
	return clientOption(func(o *clientOptions) {
		ok := true
		if failures < 1 {
			o.problems.Invalid("WithEjection", failures, "failures must be at least 1")
			ok = false
		}
		switch {
		case d <= 0:
			o.problems.Invalid("WithEjection", d, "the time must be positive")
			ok = false
		case d > maxEjectFor:
			o.problems.Invalid("WithEjection", d, "the time must be at most "+maxEjectFor.String())
			ok = false
		}
		if ok {
			o.replicas.ejectAfter, o.replicas.ejectFor = failures, d
		}
	})
}

// ReplicaCheck tells whether the replica c calls is fit for calls: nil if
// it is. The health package's Checker asks a replica's health service.
type ReplicaCheck func(ctx context.Context, c *Client) error

// WithReplicaCheck checks every replica of a Client of replicas every d
// with check (each check bounded by d): a replica whose check fails is
// left out until one succeeds. Replicas are assumed fit until checked.
func WithReplicaCheck(check ReplicaCheck, d time.Duration) ClientOption {
	return clientOption(func(o *clientOptions) {
		ok := true
		if check == nil {
			o.problems.Refuse("WithReplicaCheck(nil)", "no check")
			ok = false
		}
		if d <= 0 {
			o.problems.Invalid("WithReplicaCheck", d, "the interval must be positive")
			ok = false
		}
		if ok {
			o.replicas.check, o.replicas.checkEvery = check, d
		}
	})
}

// RetryBudget bounds the retries of calls that may have reached a handler
// (their connection failed mid-call), as gRPC's retry throttling does: a
// Client of replicas holds Max tokens; each such failed call takes one,
// each successful call gives back Ratio; a retry is made only while more
// than half the tokens are left after the failed call's own take (calls
// that fail together are each judged on what their take left). A call that cannot have reached a handler
// (a refused dial, an admission refusal, a Server shutting down) takes
// none: its retry is free, as gRPC's transparent retries are, and made at
// most once on each replica.
//
// So a full budget saves ⌈Max/2⌉−1 of the calls that fail together (those
// in flight on a replica that dies): 4 with gRPC's usual 10 tokens, 99
// with DefaultRetryBudget; the tokens they took come back at Ratio per
// success. What it bounds is the load a failing fleet is sent: beyond that
// one burst, at most Ratio retries per successful call, so a fleet whose
// calls keep failing is not sent each of them twice.
type RetryBudget struct {
	Max   float64
	Ratio float64
}

// DefaultRetryBudget is 200 tokens, 0.1 back per success: the burst of 99
// retries covers the calls in flight on a replica that dies under many
// callers (64 callers on three replicas lose none when one is killed), and
// the Ratio is gRPC's, so beyond that burst a failing fleet is sent at most
// a tenth more calls than succeed. gRPC's usual 10 tokens would save 4.
var DefaultRetryBudget = RetryBudget{Max: 200, Ratio: 0.1}

// WithRetryBudget sets the RetryBudget of a Client of replicas. Max must
// be positive and Ratio from 0 to Max.
func WithRetryBudget(b RetryBudget) ClientOption {
	return clientOption(func(o *clientOptions) {
		ok := b.Max > 0 // false for NaN too
		if !ok {
			o.problems.Invalid("WithRetryBudget", fmt.Sprintf("%+v", b), "Max must be positive")
		}
		upper := 0.0 // with no valid Max, Ratio is judged against the least one
		if ok {
			upper = b.Max
		}
		if !(b.Ratio >= 0 && b.Ratio <= upper) {
			o.problems.Invalid("WithRetryBudget", fmt.Sprintf("%+v", b), "Ratio must be from 0 to Max")
			ok = false
		}
		if ok {
			o.replicas.budget = b
		}
	})
}
