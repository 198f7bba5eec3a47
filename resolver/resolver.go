package resolver

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Resolver finds the addresses of a target's replicas and follows them.
type Resolver interface {
	// Resolve begins following target and returns at once (or with an
	// error, for a target it cannot parse). From then on, until the
	// Watch is closed, it calls report with the whole set of addresses
	// each time the set is learned or changes — the first time as soon as
	// it can — or with an error when a resolution fails, in which case the
	// caller keeps the last set it had. Calls of report are never
	// concurrent, and none is made after Close returns.
	Resolve(target string, report func(addrs []string, err error)) (Watch, error)
}

// Watch is a target being followed.
type Watch interface {
	// Refresh asks for a resolution now rather than at the next interval:
	// the caller saw a replica fail. It never blocks; a resolver with
	// nothing to refresh ignores it.
	Refresh()
	// Close stops following the target and waits until report is no
	// longer being called.
	Close() error
}

// ErrNoAddresses is reported when a target resolves to no address at all.
var ErrNoAddresses = errors.New("resolver: the target has no addresses")

// Static is a Resolver of a fixed list. Its target is the list itself,
// comma-separated ("a:1,b:2"); when Addrs is set, the target is ignored
// and Addrs is the list.
type Static struct {
	Addrs []string
}

// Resolve reports the list once.
func (s Static) Resolve(target string, report func([]string, error)) (Watch, error) {
	addrs := s.Addrs
	if addrs == nil {
		for a := range strings.SplitSeq(target, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolver: static target %q: %w", target, ErrNoAddresses)
	}
	report(append([]string(nil), addrs...), nil)
	return nopWatch{}, nil
}

type nopWatch struct{}

func (nopWatch) Refresh()     {}
func (nopWatch) Close() error { return nil }

// Schemes picks a Resolver by the target's scheme: "dns:///name:port" is
// resolved by Schemes["dns"] with the target "name:port". The forms
// "scheme:///rest" and "scheme://authority/rest" (the authority, a DNS
// server's address for instance, is dropped) and "scheme:rest" are
// understood, as gRPC's target names are. A target without a scheme is
// refused.
type Schemes map[string]Resolver

// Default resolves "dns:///" targets with DNS{} and "static:///" targets
// with Static{}.
var Default = Schemes{"dns": DNS{}, "static": Static{}}

// Resolve hands the rest of the target to the Resolver of its scheme.
func (s Schemes) Resolve(target string, report func([]string, error)) (Watch, error) {
	scheme, rest, ok := SplitTarget(target)
	if !ok {
		return nil, fmt.Errorf("resolver: target %q has no scheme (want scheme:///name)", target)
	}
	r := s[scheme]
	if r == nil {
		return nil, fmt.Errorf("resolver: target %q: no resolver for scheme %q", target, scheme)
	}
	if rest == "" {
		// "dns://name:7000" reads as the authority "name:7000" and no
		// name at all: say so, rather than what the resolver makes of "".
		return nil, fmt.Errorf("resolver: target %q names nothing after its scheme (want %s:///name)", target, scheme)
	}
	return r.Resolve(rest, report)
}

// SplitTarget splits "scheme:///rest", "scheme://authority/rest" or
// "scheme:rest" into its scheme and rest. ok is false when target has no
// scheme (a plain "host:port" has none: what precedes its colon is not
// followed by "//" and contains a dot, or the rest is a port). The scheme
// is returned in lower case: schemes are not case-sensitive (RFC 3986).
func SplitTarget(target string) (scheme, rest string, ok bool) {
	scheme, rest, ok = strings.Cut(target, ":")
	if !ok || scheme == "" || !isScheme(scheme) {
		return "", "", false
	}
	if after, found := strings.CutPrefix(rest, "//"); found {
		_, rest, _ = strings.Cut(after, "/") // drop the authority
		return strings.ToLower(scheme), rest, true
	}
	if rest == "" || isPort(rest) {
		return "", "", false // "host:port"
	}
	return strings.ToLower(scheme), rest, true
}

func isScheme(s string) bool {
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
			if c == '.' {
				return false // a host name, not a scheme
			}
		default:
			return false
		}
	}
	return true
}

func isPort(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Func is a Resolver that reports what a function returns: once when
// Resolve is called, before it returns, and again on a goroutine of its own
// after each Refresh (Refreshes made while f runs are answered by one more
// call, not one each). It suits a test, or a list read from a file.
type Func func(target string) ([]string, error)

// Resolve calls f and reports its answer.
func (f Func) Resolve(target string, report func([]string, error)) (Watch, error) {
	w := &funcWatch{f: f, target: target, report: report}
	w.call()
	return w, nil
}

type funcWatch struct {
	f      Func
	target string
	report func([]string, error)

	// mu guards the fields below, and is never held while f or report
	// runs: Refresh must not block, even when called from report.
	mu      sync.Mutex
	closed  bool
	busy    bool // the goroutine calling f is running
	pending bool // a Refresh not yet answered by a call of f
	running sync.WaitGroup
}

// call calls f and reports its answer. One call at a time: the first, in
// Resolve, before any Refresh can be; the others on the one goroutine that
// Refresh starts while none is running.
func (w *funcWatch) call() {
	addrs, err := w.f(w.target)
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return // Close was called while f ran: the answer is no longer wanted
	}
	if err == nil && len(addrs) == 0 {
		err = ErrNoAddresses
	}
	w.report(addrs, err)
}

func (w *funcWatch) Refresh() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.pending = true
	if w.busy {
		return // the goroutine will see pending when f returns
	}
	w.busy = true
	w.running.Add(1)
	go func() {
		defer w.running.Done()
		for w.next() {
			w.call()
		}
	}()
}

// next reports whether the goroutine should call f (again): a Refresh is
// pending and the Watch is not closed. When not, the goroutine ends.
func (w *funcWatch) next() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || !w.pending {
		w.busy = false
		return false
	}
	w.pending = false
	return true
}

func (w *funcWatch) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.running.Wait()
	return nil
}
