package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkConcurrency/<impl>/callers=<n> makes 16B calls from n goroutines
// sharing one client, for n from 1 to 1024: how throughput and latency grow
// with callers. One op is one call; the b.N calls are split evenly between
// the callers (min(n, b.N) of them, so a run of -benchtime=1x has one
// caller), which are started before the timer and released together. Each
// caller writes the latency of each of its calls (two monotonic clock
// reads) into its own part of one slice allocated before the timer, so the
// measurement costs every implementation the same few nanoseconds a call
// and shares nothing between callers. Besides ns/op (wall time / calls)
// it reports calls/s, p50-ns and p99-ns (over every call of the run) and
// cpu-ns/op.

// concurrencyImpls are the rows of BenchmarkConcurrency, in the report's
// order: zerodial's shortcut (copy mode) and three network paths, beside
// the peers that share one client between callers.
var concurrencyImpls = []string{
	"zerodial-copy",
	"zerodial-memory",
	"zerodial-tcp",
	"zerodial-mux",
	"netrpc-yamux",
	"msgpackrpc-yamux",
	"grpc-tcp",
}

// concurrencyCallers are the points of the curve.
var concurrencyCallers = []int{1, 4, 16, 64, 256, 1024}

func BenchmarkConcurrency(b *testing.B) {
	for _, name := range concurrencyImpls {
		setup := registry[name]
		b.Run(name, func(b *testing.B) {
			for _, n := range concurrencyCallers {
				b.Run(fmt.Sprintf("callers=%d", n), func(b *testing.B) {
					runConcurrency(b, setup(b, size16)(), n)
				})
			}
		})
	}
}

// runConcurrency makes b.N 16B calls of call from n goroutines.
func runConcurrency(b *testing.B, call callFunc, n int) {
	g := min(n, b.N)
	lat := make([]time.Duration, b.N)
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range g {
		lo, hi := i*b.N/g, (i+1)*b.N/g
		mine := lat[lo:hi]
		wg.Go(func() {
			args, reply := new(Args), new(Product)
			<-start
			for j := range mine {
				a := int64(lo + j)
				*args = Args{A: a, B: 7}
				*reply = Product{}
				t0 := time.Now()
				err := call(ctx, multiply, args, reply)
				mine[j] = time.Since(t0)
				if err != nil {
					b.Error(err)
					return
				}
				if reply.P != 7*a {
					b.Errorf("Multiply(%d, 7) = %d", a, reply.P)
					return
				}
			}
		})
	}
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	if b.Failed() {
		return
	}
	cpu.report(b)
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "calls/s")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(lat, 99)), "p99-ns")
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(len*p/100)
	return sorted[max(rank, 1)-1]
}

// TestConcurrencyImpls checks that every row of BenchmarkConcurrency is a
// registered implementation that shares one client between callers.
func TestConcurrencyImpls(t *testing.T) {
	for _, name := range concurrencyImpls {
		if _, ok := registry[name]; !ok {
			t.Errorf("%s is not registered", name)
		}
	}
	if got := percentile([]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50); got != 5 {
		t.Errorf("p50 of 1..10 = %d, want 5", got)
	}
	if got := percentile([]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99); got != 10 {
		t.Errorf("p99 of 1..10 = %d, want 10", got)
	}
}
