package dispatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// BenchmarkShutdownStreams measures a Shutdown with n streams open whose
// handlers end when told (ShuttingDown), on every path: the time from
// Shutdown's call to its return. Each iteration sets up a Server of its
// own, so run it with a small fixed count (-benchtime=20x).
func BenchmarkShutdownStreams(b *testing.B) {
	for _, p := range paths {
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/streams=%d", p.name, n), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					e := p.setup(b, noInterceptors)
					err := dispatch.HandleStream(e.server, "Watch.Ticks", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
						if err := s.Send(&Num{1}); err != nil {
							return err
						}
						select {
						case <-dispatch.ShuttingDown(ctx):
							return nil
						case <-ctx.Done():
							return ctx.Err()
						}
					}, dispatch.Borrows())
					if err != nil {
						b.Fatal(err)
					}
					first, ended := make(chan struct{}, n), make(chan error, n)
					for range n {
						go func() {
							for _, err := range dispatch.CallStream[Num, Num](context.Background(), e.client, "Watch.Ticks", &Num{}) {
								if err != nil {
									ended <- err
									return
								}
								first <- struct{}{}
							}
							ended <- nil
						}()
					}
					for range n {
						<-first
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					b.StartTimer()
					err = e.server.Shutdown(ctx)
					b.StopTimer()
					cancel()
					if err != nil {
						b.Fatal(err)
					}
					for range n {
						if err := <-ended; err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
			})
		}
	}
}
