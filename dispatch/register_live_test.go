package dispatch_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// Late is a service registered while its Server serves.
type Late struct{}

func (Late) Add(args Args, reply *int) error { *reply = args.A + args.B; return nil }

// Methods may be registered while the Server serves calls, on every path:
// a call finds the method once its registration has returned, not before
// (CodeNotFound, in net/rpc's words), and the calls of the methods
// registered before go on meanwhile. Run with -race, this is what makes it
// safe: the router's table is replaced whole under a lock, and read
// without one.
func TestRegisterWhileServing(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Base.Echo", func(ctx context.Context, n *int, r *int) error { *r = *n; return nil }))
	clients := map[dispatch.Path]*dispatch.Client{}
	for _, p := range pathNames {
		clients[p], _ = dialPath(t, p, srv)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	seen := make(chan dispatch.Path, len(pathNames)) // a path whose call of a late method succeeded
	for p, c := range clients {
		wg.Go(func() {
			found := false
			for i := 0; !stop.Load(); i++ {
				var r int
				if err := c.Call(context.Background(), "Base.Echo", i, &r); err != nil || r != i {
					t.Errorf("%s: Base.Echo(%d) = %d, %v while methods were registered", p, i, r, err)
					return
				}
				err := c.Call(context.Background(), "Late.Add", Args{A: i, B: 1}, &r)
				switch {
				case err == nil && r == i+1:
					if !found {
						found = true
						seen <- p
					}
				case err != nil && !found && codeOf(err) == dispatch.CodeNotFound:
				default:
					t.Errorf("%s: Late.Add(%d, 1) = %d, %v (found before: %v)", p, i, r, err, found)
					return
				}
			}
		})
	}
	// The table changes under the calls: many registrations of every
	// kind, Late.Add among them.
	for i := range 20 {
		require.NoError(t, dispatch.Handle(srv, fmt.Sprintf("Churn%d.Echo", i), func(ctx context.Context, n *int, r *int) error { *r = *n; return nil }))
	}
	require.NoError(t, srv.Register(Late{}))
	require.NoError(t, srv.RegisterName("Later", Late{}, dispatch.Borrows()))
	require.NoError(t, dispatch.HandleStream(srv, "Late.Count", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
		for n, err := range s.Recv() {
			if err != nil {
				return err
			}
			for i := range *n {
				if err := s.Send(&i); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	for i := 20; i < 40; i++ {
		require.NoError(t, dispatch.Handle(srv, fmt.Sprintf("Churn%d.Echo", i), func(ctx context.Context, n *int, r *int) error { *r = *n; return nil }))
	}
	for range pathNames {
		recv(t, seen, waitLong, "a call of Late.Add on every path")
	}
	stop.Store(true)
	wg.Wait()

	for p, c := range clients {
		var r int
		assert.NoError(t, c.Call(context.Background(), "Later.Add", Args{A: 2, B: 3}, &r), p)
		assert.Equal(t, 5, r, p)
		assert.NoError(t, c.Call(context.Background(), "Churn39.Echo", 9, &r), p)
		assert.Equal(t, 9, r, p)
		got := 0
		for _, err := range dispatch.CallStream[int, int](context.Background(), c, "Late.Count", new(3)) {
			require.NoError(t, err, p)
			got++
		}
		assert.Equal(t, 3, got, p)
	}
}

// A monolith wires services that call each other through a Client of its
// own Server, made once the Server serves: Orders calls Billing, which is
// registered after Orders, after Start, and after the Client was dialled.
// Until then Orders' calls of it fail as the network would say.
func TestRegisterMonolith(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			srv := dispatch.NewServer()
			// An atomic, as the race detector cannot see that a call over
			// a socket follows what its caller did before.
			var client atomic.Pointer[dispatch.Client]
			require.NoError(t, dispatch.Handle(srv, "Orders.Place", func(ctx context.Context, n *int, total *int) error {
				return client.Load().Call(ctx, "Billing.Charge", *n, total)
			}))
			self, _ := dialPath(t, p, srv)
			client.Store(self)
			err := self.Call(context.Background(), "Orders.Place", 2, new(int))
			assert.EqualError(t, err, "rpc: can't find service Billing.Charge")
			require.NoError(t, dispatch.Handle(srv, "Billing.Charge", func(ctx context.Context, n *int, total *int) error {
				*total = *n * 100
				return nil
			}))
			var total int
			require.NoError(t, self.Call(context.Background(), "Orders.Place", 2, &total))
			assert.Equal(t, 200, total)
		})
	}
}
