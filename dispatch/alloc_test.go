package dispatch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zerodial/transport/dispatch"
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

// TestMetadataAllocs guards what request metadata costs a call, read by
// its handler or not. MetadataFrom hands out a copy (one map), so that a
// handler's changes are its own; a handler that reads a key with
// MetadataValue, or does not read it, pays nothing for that, and on the
// shortcut nothing at all: the handler's context holds the caller's map,
// which nobody changes.
func TestMetadataAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	limits := map[string]map[string]float64{
		"shortcut-direct": {"Md.Read": 3, "Md.Value": 1, "Md.Ignore": 1},
		"shortcut-copy":   {"Md.Read": 4, "Md.Value": 2, "Md.Ignore": 2},
		"memory":          {"Md.Read": 7, "Md.Value": 5, "Md.Ignore": 5},
		"tcp":             {"Md.Read": 7, "Md.Value": 5, "Md.Ignore": 5},
	}
	for _, p := range paths {
		want, ok := limits[p.name]
		if !ok {
			continue // mux: yamux's own allocations are not ours to guard
		}
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t, noInterceptors)
			reads := map[string]func(context.Context) string{
				"Md.Read":   func(ctx context.Context) string { return dispatch.MetadataFrom(ctx)["k"] },
				"Md.Value":  func(ctx context.Context) string { v, _ := dispatch.MetadataValue(ctx, "k"); return v },
				"Md.Ignore": nil,
			}
			for name, read := range reads {
				err := dispatch.Handle(e.server, name, func(ctx context.Context, args *Args, reply *int) error {
					*reply = args.A
					if read != nil {
						if read(ctx) != "v" {
							return errors.New("metadata k is not v")
						}
					}
					return nil
				}, dispatch.Borrows())
				if err != nil {
					t.Fatal(err)
				}
			}
			ctx := dispatch.WithMetadata(context.Background(), dispatch.Metadata{"k": "v"})
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
