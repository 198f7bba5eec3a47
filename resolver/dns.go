package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zerodial/transport/internal/unixsock"
)

// Defaults of the DNS fields left zero.
const (
	defaultInterval   = 30 * time.Second
	defaultMinRefresh = time.Second
)

// DNS is a Resolver that follows a target through DNS, as Kubernetes
// headless Services and Consul DNS serve replicas. Its zero value is ready
// to use.
//
// A target with a port, "host:port", is resolved through the host's A and
// AAAA records: each of its IP addresses, with the port, is an address
// ("svc.ns.svc.cluster.local:7000" gives "10.0.0.7:7000", "[fd00::7]:7000"
// and so on). The port is a number, not a service name. A host that is an
// IP address is its own only address, and no DNS is asked.
//
// A target without a port is the name of SRV records
// ("_grpc._tcp.svc.ns.svc.cluster.local", "svc.service.consul"). Only the
// records of the lowest priority value are used — by RFC 2782, those of a
// higher value are backups, to call only when all of those fail, which DNS
// alone cannot tell — and their weights are ignored, the caller balancing
// between the addresses as it does for any other set. Each record's target
// is resolved through its A and AAAA records; each of its IP addresses,
// with the record's port, is an address. A record whose target is gone
// (the name does not exist, or has no address) is left out; a record of
// target "." or port 0 ("no service here", RFC 2782) too. A target whose
// lookup fails otherwise (a timeout, a server failure) fails the whole
// resolution: its replicas may well be there still.
//
// The target is resolved at once, then every Interval and on Refresh, on a
// goroutine of the Watch's own. The set is reported sorted, each time it
// differs from the last reported, and after a failure once resolutions
// succeed again (so that the caller learns that the failure is over). A
// failed resolution, or one that finds no address at all, is reported as
// an error, each time; it is retried at the next Interval or Refresh, not
// at once.
//
// Closing the Watch cancels the lookup in flight and waits for it to end.
// Go's own resolver (net.Resolver with PreferGo, or where cgo is not used)
// may notice the cancellation only at its own timeout (5 seconds unless
// resolv.conf says otherwise), unless the Resolver's Dial closes its
// connection when its context is done.
type DNS struct {
	// Resolver makes the lookups. Nil means net.DefaultResolver.
	Resolver *net.Resolver

	// Interval is the time from one resolution to the next, when Refresh
	// is not called. Zero (or less) means 30 seconds.
	Interval time.Duration

	// MinRefresh is the least time from one resolution to a resolution
	// asked for by Refresh: a Refresh sooner than that is put off until
	// then, and Refreshes meanwhile make one resolution, not one each.
	// Callers refresh when a replica fails, and when many fail at once DNS
	// should not be asked as many times. Zero (or less) means 1 second.
	MinRefresh time.Duration
}

// Resolve checks the target's form (see DNS) and, when it is good, begins
// following it. report must not call the Watch's Close, which waits for
// report to return; it may call Refresh.
func (d DNS) Resolve(target string, report func([]string, error)) (Watch, error) {
	lookup, fixed, err := d.parse(target)
	if err != nil {
		return nil, err
	}
	w := &dnsWatch{
		target:     target,
		lookup:     lookup,
		fixed:      fixed,
		report:     report,
		interval:   d.Interval,
		minRefresh: d.MinRefresh,
		refresh:    make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	if w.interval <= 0 {
		w.interval = defaultInterval
	}
	if w.minRefresh <= 0 {
		w.minRefresh = defaultMinRefresh
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.run()
	return w, nil
}

// lookupFunc resolves a target to its addresses, unsorted.
type lookupFunc func(ctx context.Context) ([]netip.AddrPort, error)

// parse checks target and returns the lookup that resolves it. fixed is
// true when the target is an IP address, which never changes.
func (d DNS) parse(target string) (lookup lookupFunc, fixed bool, err error) {
	bad := func(why string) error {
		return fmt.Errorf("resolver: dns target %q: %s", target, why)
	}
	if target == "" {
		return nil, false, bad("empty (want host:port, or the name of SRV records)")
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	if strings.Contains(target, "://") {
		return nil, false, bad(`a scheme is no part of it (Schemes, such as Default, take "dns:///name")`)
	}
	if unixsock.Is(target) {
		return nil, false, bad("a unix socket's address has no DNS name (Static reports it as it is: docs/unix.md)")
	}
	if _, err := netip.ParseAddr(target); err == nil {
		return nil, false, bad("an IP address needs a port")
	}
	if !strings.Contains(target, ":") {
		// No port: the name of SRV records.
		if !isDomainName(target) {
			return nil, false, bad("not a DNS name")
		}
		return func(ctx context.Context) ([]netip.AddrPort, error) {
			return lookupSRV(ctx, r, target)
		}, false, nil
	}
	host, portStr, err := net.SplitHostPort(target)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return nil, false, bad(ae.Err)
		}
		return nil, false, bad(err.Error())
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, false, bad(fmt.Sprintf("port %q is not a number from 1 to 65535", portStr))
	}
	if host == "" {
		return nil, false, bad("no host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		return func(context.Context) ([]netip.AddrPort, error) { return []netip.AddrPort{ap}, nil }, true, nil
	}
	if !isDomainName(host) {
		return nil, false, bad(fmt.Sprintf("host %q is not a DNS name", host))
	}
	return func(ctx context.Context) ([]netip.AddrPort, error) {
		ips, err := r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		addrs := make([]netip.AddrPort, len(ips))
		for i, ip := range ips {
			addrs[i] = netip.AddrPortFrom(ip.Unmap(), uint16(port))
		}
		return addrs, nil
	}, false, nil
}

// lookupSRV resolves the SRV records of name, and the targets of those of
// the lowest priority value.
func lookupSRV(ctx context.Context, r *net.Resolver, name string) ([]netip.AddrPort, error) {
	_, srvs, err := r.LookupSRV(ctx, "", "", name)
	if err != nil && len(srvs) == 0 {
		return nil, err
	}
	// With some records as well as an error, the others were malformed
	// and dropped (net.Resolver.LookupSRV): the good ones are still right.
	var best []*net.SRV
	for _, s := range srvs {
		if s.Target == "." || s.Target == "" || s.Port == 0 {
			continue
		}
		switch {
		case len(best) == 0 || s.Priority < best[0].Priority:
			best = append(best[:0], s)
		case s.Priority == best[0].Priority:
			best = append(best, s)
		}
	}
	var addrs []netip.AddrPort
	ipsOf := make(map[string][]netip.Addr) // a target in two records is looked up once
	for _, s := range best {
		ips, seen := ipsOf[s.Target]
		if !seen {
			ips, err = r.LookupNetIP(ctx, "ip", s.Target)
			var de *net.DNSError
			if err != nil && !(errors.As(err, &de) && de.IsNotFound) {
				// Not knowing this target's addresses now is no reason
				// to drop them: fail, and the caller keeps its set.
				return nil, err
			}
			// Not found: the replica is gone (the SRV answer can be a
			// little older than the A/AAAA records).
			ipsOf[s.Target] = ips
		}
		for _, ip := range ips {
			addrs = append(addrs, netip.AddrPortFrom(ip.Unmap(), s.Port))
		}
	}
	return addrs, nil
}

// isDomainName reports whether s is a syntactically good DNS name: labels
// of letters, digits, '-' and '_' (SRV names begin with '_'), of 1 to 63
// bytes, not beginning or ending with '-', at most 253 bytes in all not
// counting a final '.'.
func isDomainName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}

type dnsWatch struct {
	target     string
	lookup     lookupFunc
	fixed      bool
	report     func([]string, error)
	interval   time.Duration
	minRefresh time.Duration

	ctx     context.Context // canceled by Close: ends run and its lookups
	cancel  context.CancelFunc
	refresh chan struct{} // one slot: Refreshes not yet seen by run are one
	done    chan struct{} // closed when run returns

	// Owned by run.
	last   []string // the set last reported; nil before the first (never empty)
	failed bool     // the last resolution failed
}

// Refresh asks for a resolution, no sooner than MinRefresh after the last.
func (w *dnsWatch) Refresh() {
	select {
	case w.refresh <- struct{}{}:
	default: // one is pending already
	}
}

// Close stops the resolutions and waits for the goroutine making them (see
// DNS on how long a lookup in flight may take to end).
func (w *dnsWatch) Close() error {
	w.cancel()
	<-w.done
	return nil
}

func (w *dnsWatch) run() {
	defer close(w.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last time.Time // when the last resolution began
	next := time.Now() // when the next is due: the first at once
	for {
		timer.Reset(time.Until(next))
		select {
		case <-w.ctx.Done():
			return
		case <-w.refresh:
			if soon := last.Add(w.minRefresh); soon.Before(next) {
				next = soon
			}
			continue
		case <-timer.C:
		}
		last = time.Now()
		next = last.Add(w.interval)
		if !w.resolve() {
			return
		}
		if w.fixed {
			<-w.ctx.Done() // an IP address: nothing more to learn
			return
		}
	}
}

// resolve makes one resolution and reports what it learned. It returns
// false when the Watch is closed.
func (w *dnsWatch) resolve() bool {
	addrPorts, err := w.lookup(w.ctx)
	if w.ctx.Err() != nil {
		return false // closed: report nothing, not even the cancellation
	}
	if err == nil && len(addrPorts) == 0 {
		err = ErrNoAddresses
	}
	if err != nil {
		w.failed = true
		w.report(nil, fmt.Errorf("resolver: dns target %q: %w", w.target, err))
		return true
	}
	slices.SortFunc(addrPorts, netip.AddrPort.Compare)
	addrPorts = slices.Compact(addrPorts)
	addrs := make([]string, len(addrPorts))
	for i, ap := range addrPorts {
		addrs[i] = ap.String()
	}
	if w.last != nil && !w.failed && slices.Equal(addrs, w.last) {
		return true
	}
	w.last, w.failed = addrs, false
	w.report(slices.Clone(addrs), nil) // the caller may keep or change its copy
	return true
}
