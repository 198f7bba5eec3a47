package bench

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine a benchmark or test started is
// still running at the end: every setup must stop what it starts.
// A child of the two-process rows (proc_test.go) serves instead, and runs
// no test.
func TestMain(m *testing.M) {
	if kind := os.Getenv(childEnv); kind != "" {
		n, _ := strconv.Atoi(os.Getenv(childSizeEnv))
		os.Exit(serveChild(kind, os.Getenv(childAddrEnv), n))
	}
	goleak.VerifyTestMain(m)
}

// TestImplsRegistered checks that every implementation in implOrder exists,
// so that a missing one cannot drop silently out of the report.
func TestImplsRegistered(t *testing.T) {
	for _, name := range implOrder {
		if _, ok := registry[name]; !ok {
			t.Errorf("%s is not registered", name)
		}
	}
	if len(registry) != len(implOrder) {
		t.Errorf("%d registered, %d in implOrder", len(registry), len(implOrder))
	}
}

// TestImpls checks that every implementation computes the right answers,
// one call at a time and from concurrent callers, before anyone times it.
func TestImpls(t *testing.T) {
	ctx := context.Background()
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) {
			for _, sz := range im.sizes {
				t.Run(sz.name, func(t *testing.T) {
					call := im.setup(t, sz)()
					for i := range int64(3) {
						if sz.n == 0 {
							var reply Product
							if err := call(ctx, multiply, &Args{A: i - 1, B: -9}, &reply); err != nil {
								t.Fatal(err)
							}
							if want := (i - 1) * -9; reply.P != want {
								t.Fatalf("Multiply(%d, -9) = %d, want %d", i-1, reply.P, want)
							}
							continue
						}
						data := payload(sz.n)
						data[0] = byte(i)
						var reply Payload
						if err := call(ctx, echo, &Payload{Data: data}, &reply); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(reply.Data, data) {
							t.Fatalf("Echo of %d bytes returned %d other bytes", sz.n, len(reply.Data))
						}
					}
				})
			}
			t.Run("concurrent", func(t *testing.T) {
				newCaller := im.setup(t, size16)
				var wg sync.WaitGroup
				for g := range int64(8) {
					call := newCaller()
					wg.Go(func() {
						for i := range int64(20) {
							var reply Product
							if err := call(ctx, multiply, &Args{A: g, B: i}, &reply); err != nil {
								t.Error(err)
								return
							}
							if reply.P != g*i {
								t.Errorf("Multiply(%d, %d) = %d", g, i, reply.P)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		})
	}
}
