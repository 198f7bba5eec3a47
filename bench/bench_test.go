// Package bench measures zerodial side by side with its peers — net/rpc,
// hashicorp's msgpackrpc, gRPC, grpchan's in-process channel, drpc — and with
// floors that do the least work any implementation of the same call must
// do. It is a module of its own so that none of the peers enters the
// library's go.mod.
//
//	go test -run '^$' -bench . -benchmem          # everything
//	go run ./cmd/report                           # medians, ratios, docs/bench.md and docs/bench.svg
//
// BenchmarkUnary/<impl>/<size> makes one call at a time; BenchmarkParallel/<impl>
// makes 16-byte calls from 64 goroutines sharing one client;
// BenchmarkStream/<impl> (stream_test.go) makes one server-streaming call
// of 10,000 16-byte messages per op; BenchmarkReplicas/<row>
// (replicas_test.go) makes 16-byte calls one at a time through a Client of
// a set of replicas, beside a Client of one address and gRPC's round_robin;
// BenchmarkConcurrency/<impl>/callers=<n> (concurrency_test.go) makes
// 16-byte calls from 1 to 1024 goroutines sharing one client, with p50 and
// p99 latency; BenchmarkIdle/<row> (idle_test.go) measures the heap and the
// goroutines that idle connections hold.
package bench

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
)

// callFunc makes one call: multiply takes *Args and *Product, echo takes
// *Payload and *Payload. It must be safe for concurrent use unless it came
// from a newCaller that hands out one per goroutine.
type callFunc func(ctx context.Context, m method, args, reply any) error

// setupFunc starts a server and returns newCaller, which returns a caller;
// everything setup starts is stopped, and waited for, by cleanups it
// registers on tb. sz is the size the caller will be used with (only the raw
// TCP floor needs to know it in advance). Most implementations return the
// same shared client from every newCaller call; see BenchmarkParallel.
type setupFunc func(tb testing.TB, sz size) (newCaller func() callFunc)

type impl struct {
	name  string
	setup setupFunc
	sizes []size // the sizes BenchmarkUnary and TestImpls run it at
}

// implOrder is the order of the implementations in every benchmark and in
// the report.
var implOrder = []string{
	"zerodial-direct",
	"zerodial-direct-generic",
	"zerodial-copy",
	"zerodial-direct-deadline",
	"zerodial-direct-generic-deadline",
	"zerodial-copy-deadline",
	"zerodial-memory",
	"zerodial-tcp",
	"zerodial-mux",
	"zerodial-tcp-unix",
	"zerodial-mux-unix",
	"zerodial-copy-otel",
	"zerodial-memory-otel",
	"zerodial-mux-otel",
	"zerodial-gobrpc-tcp",
	"zerodial-jsonrpc-tcp",
	"zerodial-client-gobrpc-tcp",
	"zerodial-client-jsonrpc-tcp",
	"netrpc-pipe",
	"netrpc-tcp",
	"jsonrpc-tcp",
	"netrpc-yamux",
	"msgpackrpc-yamux",
	"grpc-tcp",
	"grpc-tcp-otel",
	"grpc-bufconn",
	"grpc-inproc",
	"zerodial-http-connect",
	"zerodial-http-grpc",
	"connect-native",
	"connect-native-grpc",
	"floor-reflect",
	"floor-chan",
	"floor-tcp",
	"floor-tcp-relay",
	"floor-unix",
	"floor-yamux",
	"zerodial-tcp-proc",
	"zerodial-tcp-unix-proc",
	"zerodial-mux-unix-proc",
	"zerodial-shm-proc",
	"netrpc-unix-proc",
	"grpc-unix-proc",
	"floor-tcp-proc",
	"floor-unix-proc",
}

var (
	registryMu sync.Mutex
	registry   = map[string]setupFunc{}
	onlySizes  = map[string][]size{}
)

// register adds an implementation; each file registers its own in init.
// BenchmarkUnary runs it at every size, or at only those given.
func register(name string, setup setupFunc, only ...size) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("bench: " + name + " registered twice")
	}
	registry[name] = setup
	if len(only) > 0 {
		onlySizes[name] = only
	}
}

// impls returns the registered implementations in implOrder.
func impls() []impl {
	registryMu.Lock()
	defer registryMu.Unlock()
	var out []impl
	for _, name := range implOrder {
		if s, ok := registry[name]; ok {
			szs, only := onlySizes[name]
			if !only {
				szs = sizes
			}
			out = append(out, impl{name, s, szs})
		}
	}
	return out
}

// parallelCallers is the number of goroutines in BenchmarkParallel.
const parallelCallers = 64

func BenchmarkUnary(b *testing.B) {
	for _, im := range impls() {
		b.Run(im.name, func(b *testing.B) {
			for _, sz := range im.sizes {
				b.Run(sz.name, func(b *testing.B) {
					call := im.setup(b, sz)()
					runUnary(b, call, sz)
				})
			}
		})
	}
}

// runUnary times one call at a time. Requests and replies are allocated
// once, outside the loop, and the reply is zeroed before every call, so
// allocs/op counts what the implementation allocates, nothing else. It
// reports cpu-ns/op too: the process's user+system CPU time over the loop
// (both ends, every goroutine, the GC) per call.
func runUnary(b *testing.B, call callFunc, sz size) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU()
	defer func() {
		if !b.Failed() {
			cpu.report(b)
		}
	}()
	if sz.n == 0 {
		args, reply := new(Args), new(Product)
		var i int64
		for b.Loop() {
			i++
			*args = Args{A: i, B: 7}
			*reply = Product{}
			if err := call(ctx, multiply, args, reply); err != nil {
				b.Fatal(err)
			}
			if reply.P != 7*i {
				b.Fatalf("Multiply(%d, 7) = %d", i, reply.P)
			}
		}
		return
	}
	data := payload(sz.n)
	args, reply := &Payload{Data: data}, new(Payload)
	b.SetBytes(int64(sz.n))
	for b.Loop() {
		*reply = Payload{}
		if err := call(ctx, echo, args, reply); err != nil {
			b.Fatal(err)
		}
		if len(reply.Data) != sz.n || reply.Data[0] != data[0] || reply.Data[sz.n-1] != data[sz.n-1] {
			b.Fatalf("Echo of %d bytes returned %d bytes, or other bytes", sz.n, len(reply.Data))
		}
	}
	if !bytes.Equal(reply.Data, data) {
		b.Fatal("Echo returned other bytes")
	}
}

func BenchmarkParallel(b *testing.B) {
	for _, im := range impls() {
		b.Run(im.name, func(b *testing.B) {
			runParallel(b, im.setup(b, size16))
		})
	}
}

// runParallel makes 16-byte calls from parallelCallers goroutines. On a
// machine with GOMAXPROCS procs, RunParallel starts parallelism*procs
// goroutines, so parallelism is rounded up to reach parallelCallers. The
// callers are made before the timer starts: one shared client for every
// implementation except floor-tcp, whose raw byte stream cannot be shared
// without the framing an RPC layer adds, so each goroutine gets its own
// connection there.
func runParallel(b *testing.B, newCaller func() callFunc) {
	procs := runtime.GOMAXPROCS(0)
	par := (parallelCallers + procs - 1) / procs
	callers := make(chan callFunc, par*procs)
	for range par * procs {
		callers <- newCaller()
	}
	ctx := context.Background()
	b.SetParallelism(par)
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		call := <-callers
		args, reply := new(Args), new(Product)
		var i int64
		for pb.Next() {
			i++
			*args = Args{A: i, B: 7}
			*reply = Product{}
			if err := call(ctx, multiply, args, reply); err != nil {
				b.Error(err)
				return
			}
			if reply.P != 7*i {
				b.Errorf("Multiply(%d, 7) = %d", i, reply.P)
				return
			}
		}
	})
	b.StopTimer()
	cpu.report(b)
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "calls/s")
	}
}
