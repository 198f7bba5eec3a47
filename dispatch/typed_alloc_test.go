package dispatch_test

import (
	"context"
	"testing"
	"time"
)

// TestTypedCallAllocs: a typed call allocates no more than the untyped
// call of the same method with the pointers its caller keeps from call to
// call (BenchmarkCall's rows, the bar), on the shortcut, with a context
// that cannot end (the handler on the caller's goroutine) and with one that
// can (the handler on a worker): the descriptor's values are lent from its
// pool, not allocated per call.
func TestTypedCallAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	deadline, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, p := range paths {
		if !isShortcut(p) {
			continue
		}
		for ctxName, ctx := range map[string]context.Context{"background": context.Background(), "deadline": deadline} {
			t.Run(p.name+"/"+ctxName, func(t *testing.T) {
				e := p.setup(t, noInterceptors)
				for _, m := range []string{typedMultiply.Name(), typedAdd.Name()} {
					args := &Args{6, 7}
					var reply int
					untyped := func() {
						if err := e.client.Call(ctx, m, args, &reply); err != nil {
							t.Fatal(err)
						}
					}
					d := typedMultiply
					if m == typedAdd.Name() {
						d = typedAdd
					}
					typed := func() {
						if _, err := d.Call(ctx, e.client, Args{6, 7}); err != nil {
							t.Fatal(err)
						}
					}
					for range 20 {
						untyped() // warm the pools and the workers
						typed()
					}
					bar := testing.AllocsPerRun(500, untyped)
					if got := testing.AllocsPerRun(500, typed); got > bar {
						t.Errorf("%s: a typed call allocates %v times, the untyped call %v", m, got, bar)
					}
				}
			})
		}
	}
}
