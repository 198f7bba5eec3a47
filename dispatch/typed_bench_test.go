package dispatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// The descriptors of two methods every path's Server has (newServerKeeper):
// one registered by reflection, one by Handle.
var (
	typedMultiply = dispatch.NewMethod[Args, int]("Arith.Multiply")
	typedAdd      = dispatch.NewMethod[Args, int]("Gen.Add")
)

// BenchmarkTypedCall is BenchmarkCall through descriptors: each row beside
// the untyped row of the same path and method (BenchmarkCall's), in one
// run, on paths, the netrpc path (a Client from DialCodec) and a Client of
// two replicas. On shortcut-direct, Gen.Add's untyped row is the bar.
func BenchmarkTypedCall(b *testing.B) {
	ps := pathsAndNetRPC()
	ps = append(ps, path{"replicas", func(t testing.TB, _ ...setupOption) *env {
		return &env{client: replicasEnv(t).client}
	}})
	benchTyped(b, context.Background(), ps)
}

// BenchmarkTypedCallDeadline is BenchmarkCallDeadline through descriptors:
// on the shortcut, with a context that can end.
func BenchmarkTypedCallDeadline(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var short []path
	for _, p := range paths {
		if isShortcut(p) {
			short = append(short, p)
		}
	}
	benchTyped(b, ctx, short)
}

func benchTyped(b *testing.B, ctx context.Context, ps []path) {
	for _, p := range ps {
		for _, m := range []*dispatch.Method[Args, int]{typedMultiply, typedAdd} {
			want := 42 // 6 * 7
			if m == typedAdd {
				want = 13 // 6 + 7
			}
			b.Run(p.name+"/"+m.Name()+"/untyped", func(b *testing.B) {
				e := p.setup(b, noInterceptors)
				args := &Args{6, 7}
				var reply int
				b.ReportAllocs()
				for b.Loop() {
					if err := e.client.Call(ctx, m.Name(), args, &reply); err != nil || reply != want {
						b.Fatal(reply, err)
					}
				}
			})
			b.Run(p.name+"/"+m.Name()+"/typed", func(b *testing.B) {
				e := p.setup(b, noInterceptors)
				b.ReportAllocs()
				for b.Loop() {
					if n, err := m.Call(ctx, e.client, Args{6, 7}); err != nil || n != want {
						b.Fatal(n, err)
					}
				}
			})
		}
	}
}
