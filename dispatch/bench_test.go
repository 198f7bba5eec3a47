package dispatch_test

import (
	"context"
	"iter"
	"reflect"
	"testing"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// BenchmarkCall measures one small call on every path; bench/ compares them
// with their peers.
func BenchmarkCall(b *testing.B) {
	for _, p := range paths {
		for _, method := range []string{"Arith.Multiply", "Gen.Add"} {
			b.Run(p.name+"/"+method, func(b *testing.B) {
				e := p.setup(b, noInterceptors)
				ctx := context.Background()
				args := &Args{6, 7}
				var reply int
				b.ReportAllocs()
				for b.Loop() {
					if err := e.client.Call(ctx, method, args, &reply); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCallDeadline is BenchmarkCall on the shortcut with a context
// that can end, as production calls have: the handler then runs on a Server
// worker so that the caller can return when the context ends.
func BenchmarkCallDeadline(b *testing.B) {
	for _, p := range paths {
		if !isShortcut(p) {
			continue
		}
		for _, method := range []string{"Arith.Multiply", "Gen.Add"} {
			b.Run(p.name+"/"+method, func(b *testing.B) {
				e := p.setup(b, noInterceptors)
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				args := &Args{6, 7}
				var reply int
				b.ReportAllocs()
				for b.Loop() {
					if err := e.client.Call(ctx, method, args, &reply); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkReflectFloor is a bare reflect.Value.Call of the same method.
func BenchmarkReflectFloor(b *testing.B) {
	a := newArith()
	m, _ := reflect.TypeOf(a).MethodByName("Multiply")
	rcvr := reflect.ValueOf(a)
	var reply int
	args := Args{6, 7}
	b.ReportAllocs()
	for b.Loop() {
		out := m.Func.Call([]reflect.Value{rcvr, reflect.ValueOf(args), reflect.ValueOf(&reply)})
		if !out[0].IsNil() {
			b.Fatal("error")
		}
	}
}

// streamMsgs is how many messages one op of BenchmarkStream carries.
const streamMsgs = 10_000

// BenchmarkStream measures a server-streaming call of 10,000 messages of 16
// bytes on every path, beside two floors: a buffered channel between two
// goroutines, and iter.Pull over an iterator. On the shortcut the context
// cannot end, so CallStream runs the handler on the caller's goroutine.
func BenchmarkStream(b *testing.B) {
	payload := []byte("0123456789abcdef")
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*streamMsgs), "ns/msg")
	}
	for _, p := range pathNames {
		b.Run(string(p), func(b *testing.B) {
			srv := dispatch.NewServer()
			err := dispatch.HandleStream(srv, "Bench.Flow", func(ctx context.Context, s *dispatch.ServerStream[int, []byte]) error {
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
			if err != nil {
				b.Fatal(err)
			}
			c, _ := dialPath(b, p, srv)
			ctx, n := context.Background(), streamMsgs
			b.ReportAllocs()
			for b.Loop() {
				got := 0
				for m, err := range dispatch.CallStream[int, []byte](ctx, c, "Bench.Flow", &n) {
					if err != nil || len(*m) != len(payload) {
						b.Fatal(err)
					}
					got++
				}
				if got != streamMsgs {
					b.Fatalf("%d messages", got)
				}
			}
			report(b)
		})
	}
	b.Run("floor-channel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ch := make(chan []byte, 256)
			go func() {
				for range streamMsgs {
					ch <- payload
				}
				close(ch)
			}()
			got := 0
			for m := range ch {
				got += len(m)
			}
			if got != streamMsgs*len(payload) {
				b.Fatal(got)
			}
		}
		report(b)
	})
	b.Run("floor-iter.Pull", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			next, stop := iter.Pull(func(yield func([]byte) bool) {
				for range streamMsgs {
					if !yield(payload) {
						return
					}
				}
			})
			got := 0
			for m, ok := next(); ok; m, ok = next() {
				got += len(m)
			}
			stop()
			if got != streamMsgs*len(payload) {
				b.Fatal(got)
			}
		}
		report(b)
	})
}
