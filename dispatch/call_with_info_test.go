package dispatch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/tcp"
)

// CallWithInfo says where a call went: its Path, the one taken (the
// network, or the shortcut), and the address of the Server, with or
// without the Client's interceptors, with a reply and with an error.
func TestCallWithInfo(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, a *[2]int, r *int) error {
		if a[0] < 0 {
			return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "negative"}
		}
		*r = a[0] + a[1]
		return nil
	}))
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() { srv.Close() })
	pass := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		return next(ctx, args, reply)
	}
	for _, c := range []struct {
		name string
		opts []dispatch.ClientOption
		want dispatch.Path
	}{
		{"tcp", nil, dispatch.Path("tcp")},
		{"tcp, intercepted", []dispatch.ClientOption{dispatch.WithInterceptors(pass)}, dispatch.Path("tcp")},
		{"shortcut", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutCopy)}, dispatch.PathShortcutCopy},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), c.opts...)
			require.NoError(t, err)
			defer cl.Close()
			var info dispatch.CallInfo
			var sum int
			require.NoError(t, cl.CallWithInfo(context.Background(), "Calc.Add", [2]int{2, 3}, &sum, &info))
			assert.Equal(t, 5, sum)
			assert.Equal(t, "Calc.Add", info.Method)
			assert.Equal(t, c.want, info.Path)
			require.NotNil(t, info.RemoteAddr)
			assert.Equal(t, l.Addr().String(), info.RemoteAddr.String())

			info = dispatch.CallInfo{}
			err = cl.CallWithInfo(context.Background(), "Calc.Add", [2]int{-1, 3}, &sum, &info)
			require.Error(t, err)
			assert.Equal(t, c.want, info.Path)
			assert.Equal(t, l.Addr().String(), info.RemoteAddr.String())
		})
	}
}
