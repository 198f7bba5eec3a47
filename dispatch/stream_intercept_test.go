package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

type ctxKey struct{}

// events records what stream interceptors are told, safe for the ends'
// goroutines.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, s)
}

func (e *events) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.log
	e.log = nil
	return l
}

// interceptor is a stream interceptor named name that logs to ev, and
// applies add to the stream's context.
func (e *events) interceptor(name string, add func(context.Context) context.Context) dispatch.StreamInterceptor {
	return func(ctx context.Context, method string) (context.Context, func(error), error) {
		e.add(name + " begin " + method)
		if method == "Deny.Me" && name == "server" {
			return nil, nil, &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "no"}
		}
		return add(ctx), func(err error) { e.add(name + " end " + endCode(err)) }, nil
	}
}

// endCode names a stream's outcome: "ok", or its error's code.
func endCode(err error) string {
	if err == nil {
		return "ok"
	}
	return string(codeOf(err))
}

// Stream interceptors wrap every stream on both ends and every path, the
// fast path of CallStream included: they are told when a stream begins and
// how it ended, what they add to its context reaches the handler, and a
// Server's can refuse a stream.
func TestStreamInterceptors(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			var ev events
			srv := dispatch.NewServer(dispatch.WithStreamInterceptors(ev.interceptor("server", func(ctx context.Context) context.Context {
				return context.WithValue(ctx, ctxKey{}, "from the server's interceptor")
			})))
			handler := func(ctx context.Context, s *dispatch.ServerStream[int, string]) error {
				for n, err := range s.Recv() {
					if err != nil {
						return err
					}
					if *n < 0 {
						return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "negative"}
					}
					for _, v := range []string{dispatch.MetadataFrom(ctx)["who"], fmt.Sprint(ctx.Value(ctxKey{}))} {
						if err := s.Send(&v); err != nil {
							return err
						}
					}
					if *n == 1 { // wait for the caller to go
						<-ctx.Done()
						return ctx.Err()
					}
				}
				return nil
			}
			require.NoError(t, dispatch.HandleStream(srv, "Who.Stream", handler, dispatch.Borrows()))
			require.NoError(t, dispatch.HandleStream(srv, "Deny.Me", handler))
			c, _ := dialPath(t, p, srv, dispatch.WithStreamInterceptors(
				ev.interceptor("a", func(ctx context.Context) context.Context {
					return dispatch.WithMetadata(ctx, dispatch.Metadata{"who": "a"})
				}),
				ev.interceptor("b", func(ctx context.Context) context.Context {
					return dispatch.WithMetadata(ctx, dispatch.Metadata{"who": "b"})
				}),
			))
			collect := func(n int) ([]string, error) {
				var got []string
				for v, err := range dispatch.CallStream[int, string](context.Background(), c, "Who.Stream", &n) {
					if err != nil {
						return got, err
					}
					got = append(got, *v)
				}
				return got, nil
			}
			settle := func(want []string) {
				t.Helper()
				// The server's end may be told just after the caller's.
				require.Eventually(t, func() bool {
					ev.mu.Lock()
					defer ev.mu.Unlock()
					return len(ev.log) >= len(want)
				}, 5*time.Second, time.Millisecond)
				assert.ElementsMatch(t, want, ev.take())
			}

			got, err := collect(0)
			require.NoError(t, err)
			assert.Equal(t, []string{"b", "from the server's interceptor"}, got)
			settle([]string{"a begin Who.Stream", "b begin Who.Stream", "server begin Who.Stream",
				"server end ok", "b end ok", "a end ok"})

			_, err = collect(-1)
			assert.Equal(t, dispatch.CodeOutOfRange, codeOf(err))
			settle([]string{"a begin Who.Stream", "b begin Who.Stream", "server begin Who.Stream",
				"server end out_of_range", "b end out_of_range", "a end out_of_range"})

			for v, err := range dispatch.CallStream[int, string](context.Background(), c, "Who.Stream", new(1)) {
				require.NoError(t, err)
				require.Equal(t, "b", *v)
				break // the caller goes
			}
			// The handler sees the caller go as its context's end, or, if it
			// was sending just then, as its Send's failure: the same error.
			settle([]string{"a begin Who.Stream", "b begin Who.Stream", "server begin Who.Stream",
				"server end canceled", "b end canceled", "a end canceled"})

			var denied error
			for _, err := range dispatch.CallStream[int, string](context.Background(), c, "Deny.Me", new(0)) {
				denied = err
			}
			assert.Equal(t, dispatch.CodePermissionDenied, codeOf(denied))
			settle([]string{"a begin Deny.Me", "b begin Deny.Me", "server begin Deny.Me",
				"b end permission_denied", "a end permission_denied"})
			assert.False(t, errors.Is(denied, context.Canceled))
		})
	}
}

// A stream interceptor learns the method and path from CallInfoFrom on both
// ends.
func TestStreamInterceptorCallInfo(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			seen := make(chan string, 2)
			look := func(side string) dispatch.StreamInterceptor {
				return func(ctx context.Context, method string) (context.Context, func(error), error) {
					info, ok := dispatch.CallInfoFrom(ctx)
					seen <- fmt.Sprintf("%s %v %s %s", side, ok, info.Method, info.Path)
					return ctx, func(error) {}, nil
				}
			}
			srv := dispatch.NewServer(dispatch.WithStreamInterceptors(look("server")))
			require.NoError(t, dispatch.HandleStream(srv, "Nop.Stream", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
				for _, err := range s.Recv() {
					if err != nil {
						return err
					}
				}
				return nil
			}, dispatch.Borrows()))
			c, _ := dialPath(t, p, srv, dispatch.WithStreamInterceptors(look("client")))
			for _, err := range dispatch.CallStream[int, int](context.Background(), c, "Nop.Stream", new(0)) {
				require.NoError(t, err)
			}
			got := []string{<-seen, <-seen}
			assert.ElementsMatch(t, []string{"client true Nop.Stream " + string(p), "server true Nop.Stream " + string(p)}, got)
		})
	}
}
