package dispatch_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// counted records, for each end, the message counts a stream interceptor
// read when told its stream ended.
type counted struct {
	mu   sync.Mutex
	ends []string
}

func (c *counted) interceptor(name string) dispatch.StreamInterceptor {
	return func(ctx context.Context, method string) (context.Context, func(error), error) {
		m := dispatch.StreamMessagesFrom(ctx)
		if m == nil {
			return nil, nil, fmt.Errorf("%s: no StreamMessages", name)
		}
		return ctx, func(err error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.ends = append(c.ends, fmt.Sprintf("%s %s sent=%d received=%d", name, endCode(err), m.Sent(), m.Received()))
		}, nil
	}
}

func (c *counted) take(t *testing.T, n int) []string {
	t.Helper()
	// The server's end may be told just after the caller's.
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.ends) >= n
	}, 5*time.Second, time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	ends := c.ends
	c.ends = nil
	return ends
}

// A stream interceptor finds the stream's message counts in its context
// (StreamMessagesFrom), on both ends and every path, and reads there, when
// told the stream ended, how many messages its end sent and received; the
// handler finds the same counts. Without stream interceptors there are none.
func TestStreamMessagesCounted(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			var c counted
			srv := dispatch.NewServer(dispatch.WithStreamInterceptors(c.interceptor("server")))
			echo := func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
				if dispatch.StreamMessagesFrom(ctx) == nil {
					return &dispatch.Error{Code: dispatch.CodeInternal, Message: "the handler sees no counts"}
				}
				for n, err := range s.Recv() {
					if err != nil {
						return err
					}
					if *n < 0 {
						return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "negative"}
					}
					for range 2 {
						if err := s.Send(n); err != nil {
							return err
						}
					}
				}
				return nil
			}
			require.NoError(t, dispatch.HandleStream(srv, "Echo.Twice", echo, dispatch.Borrows()))
			cl, _ := dialPath(t, p, srv, dispatch.WithStreamInterceptors(c.interceptor("client")))

			s, err := dispatch.OpenStream[int, int](t.Context(), cl, "Echo.Twice")
			require.NoError(t, err)
			for n := range 3 {
				require.NoError(t, s.Send(&n))
			}
			require.NoError(t, s.CloseSend())
			got := 0
			for _, err := range s.Recv() {
				require.NoError(t, err)
				got++
			}
			assert.Equal(t, 6, got)
			assert.ElementsMatch(t, []string{"client ok sent=3 received=6", "server ok sent=6 received=3"}, c.take(t, 2))

			// CallStream sends its argument, on the fast path's way too;
			// a stream that fails is counted up to its failure.
			for v, err := range dispatch.CallStream[int, int](t.Context(), cl, "Echo.Twice", new(7)) {
				require.NoError(t, err)
				assert.Equal(t, 7, *v)
			}
			assert.ElementsMatch(t, []string{"client ok sent=1 received=2", "server ok sent=2 received=1"}, c.take(t, 2))
			for _, err := range dispatch.CallStream[int, int](t.Context(), cl, "Echo.Twice", new(-1)) {
				assert.Equal(t, dispatch.CodeOutOfRange, codeOf(err))
			}
			assert.ElementsMatch(t, []string{"client out_of_range sent=1 received=0", "server out_of_range sent=0 received=1"}, c.take(t, 2))
		})
	}

	// A Client of replicas counts as a Client of one address does, and a
	// stream over replicas without interceptors counts nothing, and works.
	var c counted
	srv := dispatch.NewServer(dispatch.WithStreamInterceptors(c.interceptor("server")))
	require.NoError(t, dispatch.HandleStream(srv, "Echo.Twice", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
		for n, err := range s.Recv() {
			if err != nil {
				return err
			}
			if err := s.Send(n); err != nil {
				return err
			}
			if err := s.Send(n); err != nil {
				return err
			}
		}
		return nil
	}))
	_, addr := dialPath(t, "tcp", srv)
	for _, opts := range [][]dispatch.ClientOption{{dispatch.WithStreamInterceptors(c.interceptor("client"))}, nil} {
		cl, err := dispatch.Dial(t.Context(), tcp.New(), addr, append(opts, dispatch.WithResolver(resolver.Static{}))...)
		require.NoError(t, err)
		s, err := dispatch.OpenStream[int, int](t.Context(), cl, "Echo.Twice")
		require.NoError(t, err)
		require.NoError(t, s.Send(new(1)))
		require.NoError(t, s.CloseSend())
		got := 0
		for _, err := range s.Recv() {
			require.NoError(t, err)
			got++
		}
		assert.Equal(t, 2, got)
		want := []string{"server ok sent=2 received=1"}
		if opts != nil {
			want = append(want, "client ok sent=1 received=2")
		}
		assert.ElementsMatch(t, want, c.take(t, len(want)))
		cl.Close()
	}

	srv = dispatch.NewServer()
	require.NoError(t, dispatch.HandleStream(srv, "Echo.Counts", func(ctx context.Context, s *dispatch.ServerStream[int, bool]) error {
		return s.Send(new(dispatch.StreamMessagesFrom(ctx) != nil))
	}))
	cl, _ := dialPath(t, "tcp", srv)
	for v, err := range dispatch.CallStream[int, bool](t.Context(), cl, "Echo.Counts", nil) {
		require.NoError(t, err)
		assert.False(t, *v, "counts on a Server with no stream interceptors")
	}
	assert.Nil(t, dispatch.StreamMessagesFrom(t.Context()))
}
