package dispatch_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// A stream handler that ends its goroutine (runtime.Goexit, as t.FailNow
// does) ends the stream with CodeInternal, after the messages it sent, on
// every path. (With a context that cannot end, the shortcut runs the
// handler on the caller's goroutine, as it does a call's, which Goexit
// then ends: that case is the caller's own goroutine ending.)
func TestStreamHandlerGoexit(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			srv := dispatch.NewServer()
			require.NoError(t, dispatch.HandleStream(srv, "Quit.Early", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
				one := 1
				if err := s.Send(&one); err != nil {
					return err
				}
				runtime.Goexit()
				return nil
			}, dispatch.Borrows()))
			c, _ := dialPath(t, p, srv)
			var got []int
			var last error
			for n, err := range dispatch.CallStream[int, int](t.Context(), c, "Quit.Early", new(0)) {
				if err != nil {
					last = err
					break
				}
				got = append(got, *n)
			}
			assert.Equal(t, []int{1}, got)
			assert.Equal(t, dispatch.CodeInternal, codeOf(last), "%v", last)
			assert.ErrorContains(t, last, "ended its goroutine")
		})
	}
}
