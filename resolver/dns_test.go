package resolver_test

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/zerodial/transport/resolver"
)

// wait is how long a test waits for something that should come: long, so
// that a slow machine (or -race) does not fail a test that is right.
const wait = 10 * time.Second

// report is one call of a report func.
type report struct {
	addrs []string
	err   error
}

// follow resolves target with r and returns the Watch and the reports it
// makes, in order. It fails the test if report is called concurrently or
// after Close returns. The Watch is closed when the test ends.
func follow(t *testing.T, r resolver.Resolver, target string) (resolver.Watch, <-chan report) {
	t.Helper()
	ch := make(chan report, 1000)
	var inReport, closed atomic.Bool
	w, err := r.Resolve(target, func(addrs []string, err error) {
		if !inReport.CompareAndSwap(false, true) {
			t.Error("report called concurrently")
		}
		defer inReport.Store(false)
		if closed.Load() {
			t.Error("report called after Close returned")
		}
		select {
		case ch <- report{addrs, err}:
		default:
			t.Error("too many reports")
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, w.Close())
		closed.Store(true)
	})
	return w, ch
}

// next returns the next report.
func next(t *testing.T, ch <-chan report) report {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(wait):
		t.Fatal("no report")
		return report{}
	}
}

// nextAddrs returns the next report, which must be a set of addresses.
func nextAddrs(t *testing.T, ch <-chan report) []string {
	t.Helper()
	r := next(t, ch)
	require.NoError(t, r.err)
	require.NotEmpty(t, r.addrs)
	return r.addrs
}

// nextErr returns the next report, which must be an error.
func nextErr(t *testing.T, ch <-chan report) error {
	t.Helper()
	r := next(t, ch)
	require.Error(t, r.err)
	require.Nil(t, r.addrs, "an error is reported with no addresses")
	return r.err
}

// noReport checks that no report is waiting.
func noReport(t *testing.T, ch <-chan report) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("unexpected report %v, %v", r.addrs, r.err)
	default:
	}
}

// waitCount waits until the server has been asked at least n questions of
// type typ about name.
func waitCount(t *testing.T, s *dnsServer, name string, typ dnsmessage.Type, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.count(name, typ) >= n }, wait, time.Millisecond)
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

func TestDNSHostPort(t *testing.T) {
	s := newDNSServer(t)
	s.setHost("svc.test.", "10.0.0.2", "10.0.0.10", "fd00::1", "10.0.0.2")
	d := resolver.DNS{Resolver: s.resolver()}
	_, ch := follow(t, d, "svc.test.:7000")
	// Sorted by address (not as strings), IPv6 bracketed, no duplicate.
	require.Equal(t, []string{"10.0.0.2:7000", "10.0.0.10:7000", "[fd00::1]:7000"}, nextAddrs(t, ch))
}

func TestDNSHostPortNotRooted(t *testing.T) {
	// Without the final dot the name may be tried with resolv.conf's
	// search domains first (our server says they do not exist), but it
	// is found all the same.
	s := newDNSServer(t)
	s.setHost("svc.test.", "10.0.0.1")
	_, ch := follow(t, resolver.DNS{Resolver: s.resolver()}, "svc.test:80")
	require.Equal(t, []string{"10.0.0.1:80"}, nextAddrs(t, ch))
}

func TestDNSIPAddress(t *testing.T) {
	s := newDNSServer(t)
	d := resolver.DNS{Resolver: s.resolver(), Interval: 10 * time.Millisecond, MinRefresh: time.Millisecond}
	for target, want := range map[string]string{
		"10.1.2.3:80":           "10.1.2.3:80",
		"[fd00::2]:80":          "[fd00::2]:80",
		"[::ffff:10.1.2.3]:443": "10.1.2.3:443",
	} {
		t.Run(target, func(t *testing.T) {
			w, ch := follow(t, d, target)
			require.Equal(t, []string{want}, nextAddrs(t, ch))
			w.Refresh()
			// An address never changes: nothing more to report, and
			// the DNS server was never asked.
			time.Sleep(50 * time.Millisecond)
			noReport(t, ch)
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Empty(t, s.queries)
}

func TestDNSSRV(t *testing.T) {
	s := newDNSServer(t)
	s.setSRV("_grpc._tcp.svc.test.",
		net.SRV{Target: "b.svc.test.", Port: 7002, Priority: 10, Weight: 1},
		net.SRV{Target: "a.svc.test.", Port: 7001, Priority: 10, Weight: 50},
		net.SRV{Target: "a.svc.test.", Port: 7011, Priority: 10, Weight: 50},
		net.SRV{Target: "backup.svc.test.", Port: 7003, Priority: 20},
		net.SRV{Target: "gone.svc.test.", Port: 7004, Priority: 10},
	)
	s.setHost("a.svc.test.", "10.0.0.1", "fd00::1")
	s.setHost("b.svc.test.", "10.0.0.2")
	s.setHost("backup.svc.test.", "10.0.0.3")
	_, ch := follow(t, resolver.DNS{Resolver: s.resolver()}, "_grpc._tcp.svc.test.")
	// Priority 10 only; a target that does not exist is left out; a
	// target in two records has an address for each port.
	require.Equal(t, []string{
		"10.0.0.1:7001", "10.0.0.1:7011", "10.0.0.2:7002", "[fd00::1]:7001", "[fd00::1]:7011",
	}, nextAddrs(t, ch))
	require.Zero(t, s.count("backup.svc.test.", dnsmessage.TypeA), "a backup's target is not looked up")
	require.Equal(t, 1, s.count("a.svc.test.", dnsmessage.TypeA), "a target in two records is looked up once")
}

func TestDNSSRVConsulName(t *testing.T) {
	// Consul's SRV names have no underscore: "web.service.consul".
	s := newDNSServer(t)
	s.setSRV("web.service.consul.", net.SRV{Target: "node1.node.dc1.consul.", Port: 8080, Priority: 1, Weight: 1})
	s.setHost("node1.node.dc1.consul.", "10.0.0.9")
	_, ch := follow(t, resolver.DNS{Resolver: s.resolver()}, "web.service.consul.")
	require.Equal(t, []string{"10.0.0.9:8080"}, nextAddrs(t, ch))
}

func TestDNSSRVNoAddresses(t *testing.T) {
	s := newDNSServer(t)
	// Every target gone, or "no service here" (".", port 0).
	s.setSRV("_a._tcp.svc.test.", net.SRV{Target: "gone.svc.test.", Port: 1})
	s.setSRV("_b._tcp.svc.test.", net.SRV{Target: ".", Port: 1}, net.SRV{Target: "x.svc.test.", Port: 0})
	s.setHost("x.svc.test.", "10.0.0.1")
	for _, name := range []string{"_a._tcp.svc.test.", "_b._tcp.svc.test."} {
		_, ch := follow(t, resolver.DNS{Resolver: s.resolver()}, name)
		err := nextErr(t, ch)
		require.ErrorIs(t, err, resolver.ErrNoAddresses)
		require.Contains(t, err.Error(), name)
	}
}

func TestDNSSRVTargetFailing(t *testing.T) {
	// A target whose lookup fails (not: does not exist) fails the whole
	// resolution, so that the caller keeps the set it has, the replica
	// in it.
	s := newDNSServer(t)
	s.setSRV("_grpc._tcp.svc.test.",
		net.SRV{Target: "a.svc.test.", Port: 1},
		net.SRV{Target: "b.svc.test.", Port: 1},
	)
	s.setHost("a.svc.test.", "10.0.0.1")
	s.setHost("b.svc.test.", "10.0.0.2")
	w, ch := follow(t, resolver.DNS{Resolver: s.resolver(), Interval: time.Hour, MinRefresh: time.Millisecond},
		"_grpc._tcp.svc.test.")
	require.Equal(t, []string{"10.0.0.1:1", "10.0.0.2:1"}, nextAddrs(t, ch))
	s.fail("b.svc.test.", dnsmessage.RCodeServerFailure)
	w.Refresh()
	require.False(t, isNotFound(nextErr(t, ch)))
}

func TestDNSFollowsChangesOnRefresh(t *testing.T) {
	s := newDNSServer(t)
	s.setHost("svc.test.", "10.0.0.1")
	// No resolution at the interval: only Refresh makes them.
	w, ch := follow(t, resolver.DNS{Resolver: s.resolver(), Interval: time.Hour, MinRefresh: 20 * time.Millisecond}, "svc.test.:80")
	require.Equal(t, []string{"10.0.0.1:80"}, nextAddrs(t, ch))

	// Unchanged: not reported (the next report below is the change).
	w.Refresh()
	waitCount(t, s, "svc.test.", dnsmessage.TypeA, 2)
	waitCount(t, s, "svc.test.", dnsmessage.TypeAAAA, 2)

	s.setHost("svc.test.", "10.0.0.1", "10.0.0.2") // added
	w.Refresh()
	require.Equal(t, []string{"10.0.0.1:80", "10.0.0.2:80"}, nextAddrs(t, ch))

	s.setHost("svc.test.", "10.0.0.2") // removed
	w.Refresh()
	require.Equal(t, []string{"10.0.0.2:80"}, nextAddrs(t, ch))
}

func TestDNSFollowsChangesOnInterval(t *testing.T) {
	s := newDNSServer(t)
	s.setSRV("_grpc._tcp.svc.test.", net.SRV{Target: "a.svc.test.", Port: 1})
	s.setHost("a.svc.test.", "10.0.0.1")
	s.setHost("b.svc.test.", "10.0.0.2")
	_, ch := follow(t, resolver.DNS{Resolver: s.resolver(), Interval: 10 * time.Millisecond}, "_grpc._tcp.svc.test.")
	require.Equal(t, []string{"10.0.0.1:1"}, nextAddrs(t, ch))

	// Some resolutions that find the same set: not reported.
	waitCount(t, s, "_grpc._tcp.svc.test.", dnsmessage.TypeSRV, 4)

	s.setSRV("_grpc._tcp.svc.test.", net.SRV{Target: "a.svc.test.", Port: 1}, net.SRV{Target: "b.svc.test.", Port: 2})
	require.Equal(t, []string{"10.0.0.1:1", "10.0.0.2:2"}, nextAddrs(t, ch))

	s.setSRV("_grpc._tcp.svc.test.", net.SRV{Target: "b.svc.test.", Port: 2})
	require.Equal(t, []string{"10.0.0.2:2"}, nextAddrs(t, ch))
}

func TestDNSFailure(t *testing.T) {
	s := newDNSServer(t)
	_, ch := follow(t, resolver.DNS{Resolver: s.resolver(), Interval: 10 * time.Millisecond}, "svc.test.:80")

	// The name does not exist: an error, at each resolution.
	for range 3 {
		err := nextErr(t, ch)
		require.True(t, isNotFound(err), "%v", err)
		require.Contains(t, err.Error(), `"svc.test.:80"`)
	}

	s.setHost("svc.test.", "10.0.0.1")
	for {
		r := next(t, ch)
		if r.err == nil {
			require.Equal(t, []string{"10.0.0.1:80"}, r.addrs)
			break
		}
	}

	// Gone again, or the server failing: errors, never an empty set.
	s.remove("svc.test.")
	require.True(t, isNotFound(nextErr(t, ch)))
	s.fail("svc.test.", dnsmessage.RCodeServerFailure)
	s.setHost("svc.test.", "10.0.0.1")
	for {
		err := nextErr(t, ch)
		if !isNotFound(err) {
			break // a resolution after the change
		}
	}
	nextErr(t, ch)

	// Back, with the same set as before: reported again, so that the
	// caller knows the failure is over.
	s.fail("svc.test.", dnsmessage.RCodeSuccess)
	for {
		r := next(t, ch)
		if r.err == nil {
			require.Equal(t, []string{"10.0.0.1:80"}, r.addrs)
			break
		}
	}
}

func TestDNSFailureRetriedAtIntervalOnly(t *testing.T) {
	// A failure is retried at the next Interval or Refresh, not at once.
	s := newDNSServer(t)
	s.fail("svc.test.", dnsmessage.RCodeServerFailure)
	w, ch := follow(t, resolver.DNS{Resolver: s.resolver(), Interval: time.Hour, MinRefresh: time.Millisecond}, "svc.test.:80")
	nextErr(t, ch)
	n := s.count("svc.test.", dnsmessage.TypeA)
	require.NotZero(t, n)
	time.Sleep(50 * time.Millisecond) // time to spin, were it to
	noReport(t, ch)
	require.Equal(t, n, s.count("svc.test.", dnsmessage.TypeA))

	w.Refresh()
	nextErr(t, ch)
	require.Equal(t, 2*n, s.count("svc.test.", dnsmessage.TypeA))
}

func TestDNSRefreshRateLimit(t *testing.T) {
	s := newDNSServer(t)
	s.setHost("svc.test.", "10.0.0.1")
	const minRefresh = 50 * time.Millisecond
	start := time.Now()
	w, ch := follow(t, resolver.DNS{Resolver: s.resolver(), Interval: time.Hour, MinRefresh: minRefresh}, "svc.test.:80")
	nextAddrs(t, ch)

	// Refresh as fast as we can until a few resolutions were made: the
	// first was at start or later, and each later one MinRefresh or more
	// after the one before, so there are at most 1 + elapsed/MinRefresh.
	// (Without the limit there would be one per Refresh or nearly.)
	var n int
	var elapsed time.Duration
	require.Eventually(t, func() bool {
		for range 100 {
			w.Refresh()
		}
		n = s.count("svc.test.", dnsmessage.TypeA)
		elapsed = time.Since(start) // after the count: the n lookups began before
		return n >= 4
	}, wait, time.Millisecond)
	require.LessOrEqual(t, n, 1+int(elapsed/minRefresh), "%d resolutions in %v", n, elapsed)
	noReport(t, ch) // and none of those was reported: the set is the same
}

func TestDNSCloseDuringLookup(t *testing.T) {
	// The server never answers: Close cancels the lookup and returns,
	// with nothing reported.
	s := newDNSServer(t)
	s.hangOn("_grpc._tcp.svc.test.")
	w, ch := follow(t, resolver.DNS{Resolver: s.resolver()}, "_grpc._tcp.svc.test.")
	waitCount(t, s, "_grpc._tcp.svc.test.", dnsmessage.TypeSRV, 1)
	require.NoError(t, w.Close())
	noReport(t, ch)
	require.NoError(t, w.Close(), "a second Close does nothing")
}

func TestDNSCloseWaitsForReport(t *testing.T) {
	s := newDNSServer(t)
	s.setHost("svc.test.", "10.0.0.1")
	inReport := make(chan struct{})
	release := make(chan struct{})
	var reports, closed atomic.Int32
	w, err := resolver.DNS{Resolver: s.resolver(), Interval: time.Millisecond}.Resolve("svc.test.:80",
		func([]string, error) {
			if closed.Load() != 0 {
				t.Error("report called after Close returned")
			}
			if reports.Add(1) == 1 {
				close(inReport)
				<-release
			}
		})
	require.NoError(t, err)
	<-inReport
	closeDone := make(chan struct{})
	go func() {
		defer close(closeDone)
		w.Close()
		closed.Store(1)
	}()
	time.Sleep(20 * time.Millisecond) // time for Close to return, were it not to wait
	select {
	case <-closeDone:
		t.Fatal("Close returned while report was running")
	default:
	}
	close(release)
	<-closeDone
	require.Equal(t, int32(1), reports.Load())
}

func TestDNSBadTargets(t *testing.T) {
	d := resolver.DNS{}
	for _, target := range []string{
		"",
		":80",
		"svc.test:",
		"svc.test:0",
		"svc.test:65536",
		"svc.test:http",
		"svc.test:-1",
		"10.0.0.1",
		"::1",
		"[::1]",
		"a b:80",
		"a..b:80",
		"-a.test:80",
		"a.test-:80",
		"_grpc._tcp svc",
		"svc.test:80:90",
		"dns:///svc.test:80",
		"svc/test",
		strings.Repeat("a", 64) + ".test:80",
		strings.Repeat("a.", 127) + "test",
	} {
		w, err := d.Resolve(target, func([]string, error) { t.Errorf("%q: report called", target) })
		require.Error(t, err, "%q", target)
		require.Nil(t, w)
		require.Contains(t, err.Error(), "resolver: dns target")
	}
}

func TestDNSGoodTargets(t *testing.T) {
	// Forms that are accepted.
	for _, target := range []string{
		"svc.ns.svc.cluster.local:7000",
		"svc.ns.svc.cluster.local.:7000",
		"localhost:1",
		"svc:65535",
		"_grpc._tcp.svc.ns.svc.cluster.local",
		"svc.service.consul",
		"x",
	} {
		s := newDNSServer(t) // so that no lookup leaves this machine
		w, err := resolver.DNS{Resolver: s.resolver()}.Resolve(target, func([]string, error) {})
		require.NoError(t, err, "%q", target)
		require.NoError(t, w.Close())
	}
}

func TestDefaultDNS(t *testing.T) {
	// Default's DNS{} uses net.DefaultResolver: an IP address does not
	// need it.
	for target, want := range map[string]string{
		"dns:///127.0.0.1:7000": "127.0.0.1:7000",
		"dns:///[::1]:7000":     "[::1]:7000",
		"DNS:///127.0.0.1:80":   "127.0.0.1:80",
	} {
		_, ch := follow(t, resolver.Default, target)
		require.Equal(t, []string{want}, nextAddrs(t, ch), target)
	}

	s := newDNSServer(t)
	s.setHost("svc.test.", "10.0.0.1")
	s.setSRV("_grpc._tcp.svc.test.", net.SRV{Target: "svc.test.", Port: 9})
	schemes := resolver.Schemes{"dns": resolver.DNS{Resolver: s.resolver()}}
	for target, want := range map[string]string{
		"dns:///svc.test.:7000":         "10.0.0.1:7000",
		"dns://8.8.8.8/svc.test.:7000":  "10.0.0.1:7000", // the authority is not used
		"dns:svc.test.:7000":            "10.0.0.1:7000",
		"dns:///_grpc._tcp.svc.test.":   "10.0.0.1:9",
		"dns://[::1]:53/svc.test.:7000": "10.0.0.1:7000",
	} {
		_, ch := follow(t, schemes, target)
		require.Equal(t, []string{want}, nextAddrs(t, ch), target)
	}
}

// TestDNSUnixTarget: a unix socket's address is refused with the reason,
// rather than read as the host "unix" and a port that is not a number.
func TestDNSUnixTarget(t *testing.T) {
	_, err := resolver.DNS{}.Resolve("unix:/run/app.sock", func([]string, error) { t.Error("report called") })
	require.Error(t, err)
	require.Contains(t, err.Error(), "a unix socket's address has no DNS name")
}
