package dispatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// What a stream's handler has not yet consumed counts in its connection's
// byte budget (WithMaxBytesPerConn), and the budget holds: a message that
// takes the connection past it ends its stream with CodeResourceExhausted,
// as a call past it is refused, instead of letting many streams each hold
// a window's worth. The other streams and calls of the connection go on.
// The network paths only: the budget is a network connection's, and the
// shortcut has none.
func TestStreamBytesPerConnAreBounded(t *testing.T) {
	const (
		budget = 100_000
		msg    = 1000
		msgs   = 60 // 60,000 bytes a stream: one fits the budget, two do not
	)
	for _, p := range pathNames[:3] {
		t.Run(string(p), func(t *testing.T) {
			srv := dispatch.NewServer(dispatch.WithMaxBytesPerConn(budget), dispatch.WithStreamWindow(64<<10))
			release := make(chan struct{})
			// Hold reads nothing until released, then counts the bytes it
			// was sent.
			require.NoError(t, dispatch.HandleStream(srv, "B.Hold", func(ctx context.Context, s *dispatch.ServerStream[[]byte, int]) error {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				n := 0
				for m, err := range s.Recv() {
					if err != nil {
						return err
					}
					n += len(*m)
				}
				return s.Send(&n)
			}))
			require.NoError(t, dispatch.Handle(srv, "B.Echo", func(ctx context.Context, args *int, reply *int) error {
				*reply = *args
				return nil
			}))
			c, _ := dialPath(t, p, srv)
			// A bound on the test, should the stream never end: not a
			// measure of speed.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			fill := func(s *dispatch.Stream[[]byte, int]) error {
				b := make([]byte, msg)
				for range msgs {
					if err := s.Send(&b); err != nil {
						return err
					}
				}
				return s.CloseSend()
			}

			first, err := dispatch.OpenStream[[]byte, int](ctx, c, "B.Hold")
			require.NoError(t, err)
			defer first.Close()
			require.NoError(t, fill(first), "60,000 bytes are within the budget")

			second, err := dispatch.OpenStream[[]byte, int](ctx, c, "B.Hold")
			require.NoError(t, err)
			defer second.Close()
			exhausted := &dispatch.Error{Code: dispatch.CodeResourceExhausted, Message: "dispatch: too many bytes in flight on this connection (limit 100000)"}
			if err := fill(second); err != nil { // the end may have arrived before the last Send
				assert.Equal(t, exhausted, err)
			}
			got, err := collect(second.Recv())
			assert.Empty(t, got)
			assert.Equal(t, exhausted, err, "the stream that took the connection past its budget ends")

			// The connection goes on: calls, and streams within the budget.
			var n int
			require.NoError(t, c.Call(ctx, "B.Echo", 5, &n))
			assert.Equal(t, 5, n)
			close(release)
			got, err = collect(first.Recv())
			require.NoError(t, err)
			assert.Equal(t, []int{msgs * msg}, got, "the first stream got all it was sent")
			got, err = collect(dispatch.CallStream[[]byte, int](ctx, c, "B.Hold", &[]byte{1, 2, 3}))
			require.NoError(t, err)
			assert.Equal(t, []int{3}, got)
		})
	}
}
