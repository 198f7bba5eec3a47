package dispatch_test

import (
	"context"
	"testing"
)

// TestCallAllocs guards the allocations of one small call on each path, as
// net/rpc's TestCountMallocs does. Each figure is what a call costs today;
// a change that adds one fails here. On the network paths the figure counts
// both ends (the server runs in this process).
func TestCallAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	limits := map[string]map[string]float64{
		"shortcut-direct": {"Gen.Add": 1, "Arith.Multiply": 2},
		"shortcut-copy":   {"Gen.Add": 3, "Arith.Multiply": 4},
		"memory":          {"Gen.Add": 2, "Arith.Multiply": 4},
		"tcp":             {"Gen.Add": 2, "Arith.Multiply": 4},
	}
	for _, p := range paths {
		want, ok := limits[p.name]
		if !ok {
			continue // mux: yamux's own allocations are not ours to guard
		}
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t, noInterceptors)
			ctx := context.Background()
			args := &Args{6, 7}
			var reply int
			for method, limit := range want {
				call := func() {
					if err := e.client.Call(ctx, method, args, &reply); err != nil {
						t.Fatal(err)
					}
				}
				for range 20 {
					call() // warm the pools and the workers
				}
				if got := testing.AllocsPerRun(500, call); got > limit {
					t.Errorf("%s: %v allocations per call, want at most %v", method, got, limit)
				}
			}
		})
	}
}
