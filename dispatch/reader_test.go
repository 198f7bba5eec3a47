package dispatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// A call that comes alone runs on the goroutine that read it (over tcp),
// and a caller reads its own reply while no other does: neither may let a
// slow call hold up another on the same connection, nor leave the server's
// Drain notice unread on a quiet connection.
func TestReadingGoesOn(t *testing.T) {
	for _, tt := range transports {
		t.Run(tt.name, func(t *testing.T) {
			// Shutdown that took half of DrainAckTimeout or more either
			// waited for an acknowledgement nobody read the notice for, or
			// ran on a loaded machine: it is tried again, on a new
			// Server and connection, up to 5 times; the bug waits every
			// time.
			attempt := func() time.Duration {
				tr := tt.make(t)
				srv, _, _ := newServer(t)
				// Each round's slow call signals started and waits for
				// release.
				var mu sync.Mutex
				var started, release chan struct{}
				require.NoError(t, dispatch.Handle(srv, "Slow.Wait", func(ctx context.Context, args *int, reply *int) error {
					mu.Lock()
					s, r := started, release
					mu.Unlock()
					close(s)
					select {
					case <-r:
					case <-ctx.Done():
					}
					return nil
				}))
				addr := serve(t, srv, tr, tt.listen)
				c, err := dispatch.Dial(context.Background(), tr, addr)
				require.NoError(t, err)
				defer c.Close()

				// A slow call alone on the connection, then a quick one; twice,
				// as the reading handed on once must be handed on again.
				var p int
				for round := range 2 {
					mu.Lock()
					started, release = make(chan struct{}), make(chan struct{})
					s, r := started, release
					mu.Unlock()
					slow := make(chan error, 1)
					go func() { slow <- c.Call(context.Background(), "Slow.Wait", new(1), new(int)) }()
					recv(t, s, waitLong, "the slow call to start")
					ctx, cancel := context.WithTimeout(context.Background(), waitLong)
					require.NoError(t, c.Call(ctx, "Arith.Multiply", Args{6, 7}, &p), "round %d: the quick call was held up by the slow one", round)
					cancel()
					assert.Equal(t, 42, p)
					select {
					case err := <-slow:
						t.Fatalf("round %d: the slow call ended before it was released: %v", round, err)
					default:
					}
					close(r)
					require.NoError(t, <-slow)
				}

				// A caller whose context ends while it reads its own reply.
				short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancelShort()
				blocked := make(chan struct{})
				require.NoError(t, dispatch.Handle(srv, "Slow.Block", func(ctx context.Context, args *int, reply *int) error {
					<-blocked
					return nil
				}))
				err = c.Call(short, "Slow.Block", new(1), new(int))
				require.ErrorIs(t, err, context.DeadlineExceeded)
				close(blocked)
				require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{2, 3}, &p), "the connection went on")
				assert.Equal(t, 6, p)

				// The connection goes quiet: Shutdown's Drain notice is read
				// and acknowledged, so Shutdown need not wait out
				// DrainAckTimeout.
				time.Sleep(20 * time.Millisecond)
				begun := time.Now()
				sctx, scancel := context.WithTimeout(context.Background(), waitLong)
				defer scancel()
				require.NoError(t, srv.Shutdown(sctx))
				return time.Since(begun)
			}
			for try := 1; ; try++ {
				took := attempt()
				if took < dispatch.DrainAckTimeout/2 {
					break
				}
				if try == 5 {
					t.Errorf("Shutdown waited for an acknowledgement nobody read the notice for: %v, %d times", took, try)
					break
				}
				t.Logf("try %d: Shutdown took %v; again", try, took)
			}
		})
	}
}
