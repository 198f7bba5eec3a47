package dispatch_test

import (
	"context"
	"fmt"
	"iter"
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

// BenchmarkTypedStream is BenchmarkStream's server stream through a
// descriptor (its handler given the request, sending with a Sender) beside
// the same stream by name (HandleStream, CallStream), on every path, with
// 1,000 messages of 16 bytes an op.
func BenchmarkTypedStream(b *testing.B) {
	const msgs = 1000
	payload := []byte("0123456789abcdef")
	flow := dispatch.NewServerStreamMethod[int, []byte]("Bench.Flow")
	for _, p := range pathNames {
		for _, typed := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/typed=%v", p, typed), func(b *testing.B) {
				srv := dispatch.NewServer()
				var err error
				if typed {
					err = flow.Handle(srv, func(ctx context.Context, n *int, out dispatch.Sender[[]byte]) error {
						for range *n {
							if err := out.Send(&payload); err != nil {
								return err
							}
						}
						return nil
					}, dispatch.Borrows())
				} else {
					err = dispatch.HandleStream(srv, flow.Name(), func(ctx context.Context, s *dispatch.ServerStream[int, []byte]) error {
						for n, err := range s.Recv() {
							if err != nil {
								return err
							}
							for range *n {
								if err := s.Send(&payload); err != nil {
									return err
								}
							}
						}
						return nil
					}, dispatch.Borrows())
				}
				if err != nil {
					b.Fatal(err)
				}
				c, _ := dialPath(b, p, srv)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					var seq iter.Seq2[*[]byte, error]
					if typed {
						seq = flow.Call(ctx, c, msgs)
					} else {
						n := msgs
						seq = dispatch.CallStream[int, []byte](ctx, c, flow.Name(), &n)
					}
					got := 0
					for m, err := range seq {
						if err != nil || len(*m) != len(payload) {
							b.Fatal(err)
						}
						got++
					}
					if got != msgs {
						b.Fatalf("%d messages", got)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
			})
		}
	}
}
