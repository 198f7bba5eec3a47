package dispatch_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/faultnet"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
)

// The fault and replica tests of replicas_test.go and internal/hardening
// wait on the real clock, over real sockets. Their twins here run in a
// testing/synctest bubble over a faultnet Net wrapping memory: the
// replicas listen at "replica-i", the Clients dial from the host
// "client" with a millisecond of latency each way, and a kill, an outage
// or a partition is a fault of the Net — connections reset, dials
// refused or held — rather than a Server closed. Each takes milliseconds
// of real time, and asserts the times the originals could only bound.

// faultFleet serves n replicas (replicaFleet) on memory listeners
// "replica-0"…, and returns a Net and its Transport for the host
// "client", with a millisecond of latency each way.
func faultFleet(t *testing.T, n int) (*replicaFleet, *faultnet.Net, *faultnet.Transport) {
	t.Helper()
	inner := memory.New()
	f := newFleet(t, inner, n, replicaName)
	net := faultnet.New(1)
	net.Add(faultnet.Rule{Latency: time.Millisecond})
	tr := net.Wrap(inner, "client")
	t.Cleanup(func() { tr.Close() })
	return f, net, tr
}

func replicaName(i int) string { return fmt.Sprint("replica-", i) }

// dialFaults dials the fleet over tr with the static resolver and opts.
func dialFaults(t *testing.T, f *replicaFleet, tr *faultnet.Transport, opts ...dispatch.ClientOption) *dispatch.Client {
	t.Helper()
	c, err := dispatch.Dial(context.Background(), tr, f.target(), append([]dispatch.ClientOption{dispatch.WithResolver(resolver.Default)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// holdIn is hold in a bubble: n calls of method held by replica i's
// handlers, begun once the bubble is idle.
func holdIn(t *testing.T, ctx context.Context, f *replicaFleet, r *pushResolver, c *dispatch.Client, i, n int, method string) (wait func() []error) {
	t.Helper()
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
	time.Sleep(10 * time.Millisecond) // the latency, and the quiet sweep's hand-over
	synctest.Wait()
	require.Equal(t, before+int64(n), f.calls[i].Load(), "calls held")
	return func() []error {
		var all []error
		for range n {
			all = append(all, <-errs)
		}
		return all
	}
}

// TestFaultsFailover, the twin of TestReplicasFailover: three replicas
// under load, one killed — its connections reset, its dials refused, for
// 200 ms — loses no idempotent call, and the calls it held of a method
// not marked idempotent fail with ErrShutdown; back, it is called again;
// a graceful Shutdown of another under load shows no caller an error.
func TestFaultsFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, net, tr := faultFleet(t, 3)
		idem := dialFaults(t, f, tr, dispatch.WithIdempotent("Who.Am"), dispatch.WithEjection(2, 50*time.Millisecond))
		plain := dialFaults(t, f, tr, dispatch.WithEjection(2, 50*time.Millisecond))
		stopIdem := load(t, idem, 8)
		stopPlain := load(t, plain, 8)
		time.Sleep(100 * time.Millisecond)
		net.Partition(faultnet.Partition{A: []string{"client"}, B: []string{"replica-1"}, Reset: true, Refuse: true, For: 200 * time.Millisecond})
		time.Sleep(200 * time.Millisecond)
		assert.Empty(t, stopIdem(), "idempotent calls lost when a replica was killed")
		plainErrs := stopPlain()
		for _, err := range plainErrs {
			assert.ErrorIs(t, err, dispatch.ErrShutdown, "a call the killed replica held")
		}
		assert.NotEmpty(t, plainErrs, "calls the killed replica held")

		before := f.calls[1].Load()
		stopIdem = load(t, idem, 4)
		time.Sleep(300 * time.Millisecond)
		assert.Greater(t, f.calls[1].Load(), before+10, "calls to the replica back")
		assert.Empty(t, stopIdem())

		stopPlain = load(t, plain, 8)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, f.srvs[0].Shutdown(context.Background()))
		time.Sleep(100 * time.Millisecond)
		assert.Empty(t, stopPlain(), "a caller saw the Shutdown of a replica")
	})
}

// TestFaultsOutageIsOneEjection, the twin of TestReplicaOutageIsOneEjection:
// a replica whose n calls in flight fail together — its connection reset,
// or all answered CodeUnavailable — is out for exactly the default time
// out, once, however many failed, and in again at exactly its end.
func TestFaultsOutageIsOneEjection(t *testing.T) {
	for _, n := range []int{6, 12, 18} {
		for _, how := range []string{"reset", "unavailable"} {
			t.Run(fmt.Sprint(how, "-", n), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f, net, tr := faultFleet(t, 2)
					r := &pushResolver{first: f.addrs}
					c, err := dispatch.Dial(context.Background(), tr, "svc", dispatch.WithResolver(r))
					require.NoError(t, err)
					defer c.Close()
					var failed time.Time
					if how == "reset" {
						wait := holdIn(t, context.Background(), f, r, c, 0, n, "Who.Am")
						r.push(f.addrs, nil)
						failed = time.Now()
						net.Reset([]string{"client"}, []string{"replica-0"})
						for _, err := range wait() {
							require.ErrorIs(t, err, dispatch.ErrShutdown)
						}
					} else {
						wait := holdIn(t, context.Background(), f, r, c, 0, n, "Who.Unavailable")
						close(f.gate)
						failed = time.Now().Add(time.Millisecond) // the answers' trip back
						for _, err := range wait() {
							var e *dispatch.Error
							require.ErrorAs(t, err, &e)
							require.Equal(t, dispatch.CodeUnavailable, e.Code)
						}
						r.push(f.addrs, nil)
					}
					st := c.Replicas()[0]
					require.False(t, st.In)
					assert.Equal(t, 1, st.Ejections, "one outage, one ejection")
					assert.Equal(t, failed.Add(dispatch.DefaultEjectFor), st.Until, "out until")
					time.Sleep(time.Until(st.Until) - time.Nanosecond)
					require.False(t, c.Replicas()[0].In, "in before its time is up")
					time.Sleep(time.Nanosecond)
					require.True(t, c.Replicas()[0].In, "out after its time is up")
					before := f.calls[0].Load()
					for range 2 { // round-robin
						_, err := whoAmI(context.Background(), c, 0)
						require.NoError(t, err)
					}
					assert.Equal(t, before+1, f.calls[0].Load(), "called again")
				})
			})
		}
	}
}

// TestFaultsEjectionDoubles, the twin of TestReplicaEjectionDoubles: a
// replica whose dials are refused (a partition that refuses, for 10 d) is
// out at the third refusal for exactly d; let back in and refused three
// times again, out for exactly 2 d from the last, then 4 d — the times
// read off the Net's log.
func TestFaultsEjectionDoubles(t *testing.T) {
	const d = 300 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		f, net, tr := faultFleet(t, 2)
		start := time.Now()
		net.Partition(faultnet.Partition{A: []string{"client"}, B: []string{"replica-0"}, Refuse: true, For: 10 * d})
		c := dialFaults(t, f, tr, dispatch.WithEjection(3, d))
		refusals := func() []time.Time {
			var at []time.Time
			for _, e := range net.Events() {
				if e.Kind == faultnet.Refused {
					at = append(at, start.Add(e.At))
				}
			}
			return at
		}
		for len(refusals()) < 3 {
			_, err := whoAmI(context.Background(), c, 0)
			require.NoError(t, err, "refused dials are retried on the other replica")
		}
		st := c.Replicas()[0]
		require.False(t, st.In)
		assert.Equal(t, refusals()[2].Add(d), st.Until, "out for d from the third refusal")
		time.Sleep(time.Until(st.Until))
		for len(refusals()) < 6 {
			_, err := whoAmI(context.Background(), c, 0)
			require.NoError(t, err)
		}
		st = c.Replicas()[0]
		require.False(t, st.In)
		assert.Equal(t, 2, st.Ejections)
		assert.Equal(t, refusals()[5].Add(2*d), st.Until, "out for 2 d from the third refusal after")
		time.Sleep(time.Until(st.Until))
		for c.Replicas()[0].In { // until its dials are refused again, 2 d from each other
			_, err := whoAmI(context.Background(), c, 0)
			require.NoError(t, err)
		}
		assert.Equal(t, refusals()[8].Add(4*d), c.Replicas()[0].Until, "and 4 d")
	})
}

// TestFaultsDeathUnderLoadLosesNoCall, the twin of
// TestReplicaDeathUnderLoadLosesNoCall: the death of one replica of three
// (its connections reset, its dials refused from then on) under 64
// callers of an idempotent method loses no call with the default retry
// budget.
func TestFaultsDeathUnderLoadLosesNoCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, net, tr := faultFleet(t, 3)
		c := dialFaults(t, f, tr, dispatch.WithIdempotent("Who.Am"))
		stop := load(t, c, 64)
		time.Sleep(50 * time.Millisecond)
		before := f.calls[1].Load()
		net.Partition(faultnet.Partition{A: []string{"client"}, B: []string{"replica-1"}, Reset: true, Refuse: true})
		time.Sleep(50 * time.Millisecond)
		errs := stop()
		assert.Empty(t, errs, "%d calls lost", len(errs))
		assert.Positive(t, before)
	})
}

// TestFaultsRetryBudget, the twin of
// TestCallsFailingTogetherAreJudgedOnTheirOwnTakes: three calls of an
// idempotent method in flight on a replica whose connection is reset, with
// a budget of 4 tokens and nothing given back: the first to fail is
// retried on the other replica, and only it.
func TestFaultsRetryBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, net, tr := faultFleet(t, 2)
		r := &pushResolver{first: f.addrs}
		c, err := dispatch.Dial(context.Background(), tr, "svc", dispatch.WithResolver(r), dispatch.WithIdempotent("Who.Am"),
			dispatch.WithRetryBudget(dispatch.RetryBudget{Max: 4, Ratio: 0}))
		require.NoError(t, err)
		defer c.Close()
		wait := holdIn(t, context.Background(), f, r, c, 0, 3, "Who.Am")
		r.push(f.addrs, nil)
		close(f.gate) // the retry is not held
		net.Reset([]string{"client"}, []string{"replica-0"})
		ok, lost := tallyLost(t, wait())
		assert.Equal(t, 1, ok, "calls retried")
		assert.Equal(t, 2, lost, "calls the budget did not retry")
	})
}

// TestFaultsPartition, the twin of internal/hardening's TestPartition
// (which needs root and a network namespace): across a partition, calls
// with a 400 ms deadline end at exactly 400 ms with CodeDeadlineExceeded,
// a few at once and one more after them on the connection they left; at
// the heal the same Client works again at once, on the same connection.
func TestFaultsPartition(t *testing.T) {
	const deadline = 400 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		f, net, tr := faultFleet(t, 1)
		c, err := dispatch.Dial(context.Background(), tr, f.addrs[0])
		require.NoError(t, err)
		defer c.Close()
		_, err = whoAmI(context.Background(), c, 0)
		require.NoError(t, err)
		net.Partition(faultnet.Partition{A: []string{"client"}, B: []string{"replica-0"}, For: 5 * time.Second})
		partitioned := func(calls int) {
			errs := make([]<-chan error, calls)
			start := time.Now()
			for i := range errs {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				errs[i] = callAsync(c, ctx, "Who.Am", new(time.Duration), new(string))
			}
			for _, ch := range errs {
				err := <-ch
				var de *dispatch.Error
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.ErrorAs(t, err, &de)
				assert.Equal(t, dispatch.CodeDeadlineExceeded, de.Code)
			}
			assert.Equal(t, deadline, time.Since(start))
		}
		partitioned(8)
		partitioned(1)
		time.Sleep(5*time.Second - 2*deadline)
		start := time.Now()
		for range 20 {
			_, err := whoAmI(context.Background(), c, 0)
			require.NoError(t, err)
		}
		assert.Equal(t, 20*2*time.Millisecond, time.Since(start), "20 calls a round trip each")
		for _, e := range net.Events() {
			require.Equal(t, "client→replica-0#1", e.Conn, "one connection throughout: %v", e)
		}
	})
}

// TestFaultsRollingRestartIsOneEjection, the twin of
// TestReplicaRollingRestartIsOneEjection: a replica shut down gracefully
// under load and started again at once at its address takes calls again
// once the default time out is over, and no caller sees an error.
func TestFaultsRollingRestartIsOneEjection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _, tr := faultFleet(t, 2)
		c := dialFaults(t, f, tr)
		stop := loadOf(t, c, 16, 50*time.Millisecond) // the drain takes up to 50 ms
		time.Sleep(150 * time.Millisecond)
		require.NoError(t, f.srvs[0].Shutdown(context.Background()))
		f.start(0, f.addrs[0])
		restarted := time.Now()
		before := f.calls[0].Load()
		// Out from its first refusal, during the drain (up to 50 ms), for
		// the default time out.
		time.Sleep(dispatch.DefaultEjectFor - 100*time.Millisecond)
		assert.False(t, c.Replicas()[0].In, "in before its time out ends")
		assert.Equal(t, before, f.calls[0].Load(), "called while out")
		time.Sleep(200 * time.Millisecond)
		assert.Greater(t, f.calls[0].Load(), before, "called again by %v after the restart", time.Since(restarted))
		assert.Empty(t, stop(), "a caller saw the restart")
	})
}

// TestFaultsStaleSuccessKeepsItOut, the twin of
// TestReplicaStaleSuccessKeepsItOut: a call begun before a replica was
// left out (it answered CodeUnavailable) and answered after does not let
// it back in: it is out until exactly the end of its time out.
func TestFaultsStaleSuccessKeepsItOut(t *testing.T) {
	const d = 500 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		f, _, tr := faultFleet(t, 2)
		r := &pushResolver{first: f.addrs}
		c, err := dispatch.Dial(context.Background(), tr, "svc", dispatch.WithResolver(r), dispatch.WithEjection(3, d))
		require.NoError(t, err)
		defer c.Close()
		r.push(f.addrs[:1], nil)
		pause := 300 * time.Millisecond // not held by the gate: answered after the refusal
		answered := callAsync(c, context.Background(), "Who.Am", &pause, new(string))
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 1, f.calls[0].Load(), "the call begun")
		refused := holdIn(t, context.Background(), f, r, c, 0, 1, "Who.Unavailable")
		close(f.deny)
		for _, err := range refused() {
			var e *dispatch.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, dispatch.CodeUnavailable, e.Code)
		}
		ejected := time.Now()
		require.NoError(t, <-answered)
		r.push(f.addrs, nil)
		st := c.Replicas()[0]
		require.False(t, st.In, "let back in by the success of a call begun before it was left out")
		assert.Equal(t, ejected.Add(d), st.Until)
	})
}
