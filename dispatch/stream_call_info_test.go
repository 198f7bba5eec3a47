package dispatch_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// Stream.CallInfo says where a stream went, as CallWithInfo says of a
// call: its Method, the Path taken (the network, the shortcut in copy or
// direct mode), and the address of the Server (the replica's, for a Client
// of replicas), with or without the Client's stream interceptors, which
// see it corrected by the stream's end; with a stream that fails, too.
func TestStreamCallInfo(t *testing.T) {
	var mu sync.Mutex
	var handled dispatch.CallInfo // what the last handler saw
	count := func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
		ci, _ := dispatch.CallInfoFrom(ctx)
		mu.Lock()
		handled = ci
		mu.Unlock()
		for n, err := range s.Recv() {
			if err != nil {
				return err
			}
			if *n < 0 {
				return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "negative"}
			}
			for i := range *n {
				if err := s.Send(&i); err != nil {
					return err
				}
			}
		}
		return nil
	}
	tr := tcp.New()
	t.Cleanup(func() { tr.Close() })
	var addrs []string
	for range 2 {
		srv := dispatch.NewServer()
		require.NoError(t, dispatch.HandleStream(srv, "Calc.Count", count, dispatch.Borrows()))
		l, err := tr.Listen("127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		t.Cleanup(func() { srv.Close() })
		addrs = append(addrs, l.Addr().String())
	}
	var seen []dispatch.CallInfo // what the interceptor's context says at the end
	watch := func(ctx context.Context, method string) (context.Context, func(error), error) {
		return ctx, func(error) {
			ci, _ := dispatch.CallInfoFrom(ctx)
			mu.Lock()
			seen = append(seen, ci)
			mu.Unlock()
		}, nil
	}
	for _, c := range []struct {
		name   string
		target string
		opts   []dispatch.ClientOption
		want   dispatch.Path
	}{
		{"tcp", addrs[0], nil, dispatch.Path("tcp")},
		{"tcp, intercepted", addrs[0], []dispatch.ClientOption{dispatch.WithStreamInterceptors(watch)}, dispatch.Path("tcp")},
		{"shortcut-copy", addrs[0], []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutCopy)}, dispatch.PathShortcutCopy},
		{"shortcut-direct", addrs[0], []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutDirect)}, dispatch.PathShortcutDirect},
		{"shortcut-direct, intercepted", addrs[0], []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutDirect), dispatch.WithStreamInterceptors(watch)}, dispatch.PathShortcutDirect},
		{"replicas", addrs[0] + "," + addrs[1], []dispatch.ClientOption{dispatch.WithResolver(resolver.Static{})}, dispatch.Path("tcp")},
		{"replicas, intercepted", addrs[0] + "," + addrs[1], []dispatch.ClientOption{dispatch.WithResolver(resolver.Static{}), dispatch.WithStreamInterceptors(watch)}, dispatch.Path("tcp")},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			cl, err := dispatch.Dial(context.Background(), tr, c.target, c.opts...)
			require.NoError(t, err)
			defer cl.Close()
			for _, n := range []int{3, -1} {
				s, err := dispatch.OpenStream[int, int](context.Background(), cl, "Calc.Count")
				require.NoError(t, err)
				require.NoError(t, s.Send(&n))
				require.NoError(t, s.CloseSend())
				got := 0
				for _, err := range s.Recv() {
					if n < 0 {
						require.Error(t, err)
						break
					}
					require.NoError(t, err)
					got++
				}
				assert.Equal(t, max(n, 0), got)
				info := s.CallInfo()
				assert.Equal(t, "Calc.Count", info.Method)
				assert.Equal(t, c.want, info.Path)
				require.NotNil(t, info.RemoteAddr)
				if c.target == addrs[0] {
					assert.Equal(t, addrs[0], info.RemoteAddr.String())
				} else {
					assert.Contains(t, addrs, info.RemoteAddr.String(), "a replica's address")
				}
				mu.Lock()
				assert.Equal(t, handled.Path, info.Path, "the path the handler saw")
				assert.Equal(t, handled.LocalAddr.String(), info.RemoteAddr.String(), "the Server the handler ran on")
				mu.Unlock()
				if strings.HasSuffix(c.name, "intercepted") {
					mu.Lock()
					require.NotEmpty(t, seen, "the interceptor saw the stream end")
					assert.Equal(t, info, seen[len(seen)-1], "the interceptor's CallInfo, corrected")
					mu.Unlock()
				}
			}
		})
	}
}
