package dispatch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/faultnet"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
)

// TestFaultsRandomized runs, for each of many seeds, a Client of replicas
// under faults drawn from the seed — latency and jitter, lost frames,
// connections cut after some frames, refused and
// hanging dials, a partition that may reset and refuse and heals, a
// replica shut down gracefully and started again — in a synctest bubble
// over faultnet and memory, and checks what must hold whatever the
// network does:
//
//   - no reply is delivered to the wrong call (each reply names its call);
//   - no call of a method not marked idempotent runs twice;
//   - no idempotent call runs more than once on one replica, so no more
//     than twice with two replicas (WithResolver: a call that may have
//     reached a handler is tried again only on another replica);
//   - every call ends by its deadline, exactly, in the bubble's time.
//
// Nothing is duplicated: a stream connection never delivers a frame
// twice, and the wire cannot tell a copy. A Seq is unique only among a
// connection's calls in flight (WIRE.md), and dispatch reuses it once the
// reply has come, so a second copy of a reply is the reply of whichever
// call took its Seq next (with duplicated replies, this test finds that in
// about one seed in a hundred); a second copy of a request still in
// flight is refused ("duplicate Seq in flight") with a response that may
// come before the first copy's.
//
// The seeds are 1 to 1,000; ZERODIAL_FAULT_SEEDS=n runs 1 to n, and
// FAULTNET_SEED=s runs s alone, logging its faults. A failure names its
// seed.
func TestFaultsRandomized(t *testing.T) {
	seeds := []uint64{}
	if s := os.Getenv(faultnet.SeedEnv); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", faultnet.SeedEnv, s, err)
		}
		seeds = append(seeds, seed)
	} else {
		n := 1000
		if s := os.Getenv("ZERODIAL_FAULT_SEEDS"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("ZERODIAL_FAULT_SEEDS=%q: %v", s, err)
			}
			n = v
		}
		for i := range n {
			seeds = append(seeds, uint64(i+1))
		}
	}
	verbose := len(seeds) == 1
	var calls atomic.Int64
	var mu sync.Mutex
	kinds := map[faultnet.Kind]int{}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				c, events := runFaultScenario(t, seed, verbose)
				calls.Add(int64(c))
				mu.Lock()
				for _, e := range events {
					kinds[e.Kind]++
				}
				mu.Unlock()
			})
			if t.Failed() {
				t.Logf("seed %d failed; run it alone: %s=%d go test -race -run 'TestFaultsRandomized' ./dispatch", seed, faultnet.SeedEnv, seed)
			}
		})
	}
	t.Cleanup(func() { t.Logf("%d seeds, %d calls; faults injected: %v", len(seeds), calls.Load(), kinds) })
}

// scenarioArgs is a call's arguments: its number, and how long its
// handler works.
type scenarioArgs struct {
	ID   int64
	Work time.Duration
}

// scenarioReply names the call it answers and the replica that ran it.
type scenarioReply struct {
	ID      int64
	Replica int
}

// runFaultScenario runs the scenario of seed and checks its invariants;
// it returns how many calls it made and the faults the Net injected.
func runFaultScenario(t *testing.T, seed uint64, verbose bool) (calls int, faults []faultnet.Event) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	chance := func(p float64) bool { return rng.Float64() < p }

	inner := memory.New()
	replicas := 2 + rng.IntN(2)
	var mu sync.Mutex
	runs := map[int64][]int{} // the replicas each call ran on
	var srvs []*dispatch.Server
	addrs := make([]string, replicas)
	serve := func(i int) {
		srv := dispatch.NewServer()
		handler := func(ctx context.Context, a *scenarioArgs, r *scenarioReply) error {
			mu.Lock()
			runs[a.ID] = append(runs[a.ID], i)
			mu.Unlock()
			select {
			case <-time.After(a.Work):
			case <-ctx.Done():
				return ctx.Err()
			}
			r.ID, r.Replica = a.ID, i
			return nil
		}
		if err := dispatch.Handle(srv, "Store.Get", handler); err != nil {
			t.Fatal(err)
		}
		if err := dispatch.Handle(srv, "Store.Put", handler); err != nil {
			t.Fatal(err)
		}
		l, err := inner.Listen(addrs[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(l); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		srvs[i] = srv
		mu.Unlock()
	}
	srvs = make([]*dispatch.Server, replicas)
	for i := range replicas {
		addrs[i] = fmt.Sprint("replica-", i)
		serve(i)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range srvs {
			s.Close()
		}
	}()

	n := faultnet.New(seed)
	for i := range replicas {
		r := faultnet.Rule{Addr: addrs[i], Latency: between(0, 5*time.Millisecond), Jitter: between(0, 20*time.Millisecond)}
		if chance(0.5) {
			r.Loss = rng.Float64() * 0.05
		}
		if chance(0.3) {
			r.Refuse = rng.Float64() * 0.3
		}
		if chance(0.2) {
			r.Hang = rng.Float64() * 0.2
		}
		n.Add(r)
		if chance(0.5) {
			n.Add(faultnet.Rule{Addr: addrs[i], Dir: faultnet.Direction(1 + rng.IntN(2)), CutAfterFrames: 1 + rng.IntN(20)})
		}
	}
	tr := n.Wrap(inner, "client")
	defer tr.Close()
	c, err := dispatch.Dial(context.Background(), tr, "static:///"+strings.Join(addrs, ","), dispatch.WithResolver(resolver.Default),
		dispatch.WithIdempotent("Store.Get"), dispatch.WithEjection(1+rng.IntN(3), between(10*time.Millisecond, time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if chance(0.5) { // a partition, from a moment, for a while
		at, d := between(0, 500*time.Millisecond), between(10*time.Millisecond, 2*time.Second)
		p := faultnet.Partition{A: []string{"client"}, B: []string{addrs[rng.IntN(replicas)]}, For: d, Reset: chance(0.5), Refuse: chance(0.5)}
		time.AfterFunc(at, func() { n.Partition(p) })
	}
	var wg sync.WaitGroup
	if chance(0.3) { // a replica shut down and started again
		i, at, down := rng.IntN(replicas), between(0, 500*time.Millisecond), between(0, time.Second)
		wg.Go(func() {
			time.Sleep(at)
			mu.Lock()
			srv := srvs[i]
			mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			srv.Shutdown(ctx)
			cancel()
			time.Sleep(down)
			serve(i)
		})
	}

	type plan struct {
		method   string
		args     scenarioArgs
		deadline time.Duration
		think    time.Duration
	}
	var next int64
	goroutines := 2 + rng.IntN(3)
	plans := make([][]plan, goroutines)
	for g := range plans {
		for range 4 + rng.IntN(6) {
			next++
			p := plan{method: "Store.Get", args: scenarioArgs{ID: next, Work: between(0, 50*time.Millisecond)},
				deadline: between(20*time.Millisecond, 2*time.Second), think: between(0, 100*time.Millisecond)}
			if chance(0.4) {
				p.method = "Store.Put"
			}
			plans[g] = append(plans[g], p)
		}
	}
	idempotent := map[int64]bool{}
	for _, ps := range plans {
		for _, p := range ps {
			idempotent[p.args.ID] = p.method == "Store.Get"
			calls++
		}
	}
	for _, ps := range plans {
		wg.Go(func() {
			for _, p := range ps {
				time.Sleep(p.think)
				ctx, cancel := context.WithTimeout(context.Background(), p.deadline)
				start := time.Now()
				var r scenarioReply
				err := c.Call(ctx, p.method, &p.args, &r)
				took := time.Since(start)
				cancel()
				if took > p.deadline {
					t.Errorf("seed %d: call %d (%s) ended %v after it began, past its deadline %v: %v", seed, p.args.ID, p.method, took, p.deadline, err)
				}
				if err == nil && r.ID != p.args.ID {
					t.Errorf("seed %d: call %d (%s) was given the reply of call %d", seed, p.args.ID, p.method, r.ID)
				}
				if verbose {
					t.Logf("call %d %s from %v: %v after %v (replica %d)", p.args.ID, p.method, start.Format("05.000"), err, took, r.Replica)
				}
			}
		})
	}
	wg.Wait()
	synctest.Wait()

	mu.Lock()
	for id, on := range runs {
		seen := map[int]bool{}
		for _, r := range on {
			if seen[r] {
				t.Errorf("seed %d: call %d ran twice on replica %d (ran on %v)", seed, id, r, on)
			}
			seen[r] = true
		}
		if !idempotent[id] && len(on) > 1 {
			t.Errorf("seed %d: call %d, not idempotent, ran %d times (on %v)", seed, id, len(on), on)
		}
		if replicas == 2 && len(on) > 2 {
			t.Errorf("seed %d: call %d ran %d times (on %v)", seed, id, len(on), on)
		}
	}
	mu.Unlock()
	events := n.Events()
	if verbose || t.Failed() {
		for _, e := range events {
			t.Log(e)
		}
	}
	return calls, events
}
