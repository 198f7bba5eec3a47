package dispatch_test

import (
	"context"
	"reflect"
	"testing"
	"time"
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
