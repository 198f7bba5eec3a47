package faultnet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/faultnet"
	"github.com/zerodial/transport/memory"
)

var ticks = dispatch.NewServerStreamMethod[int, int]("Slow.Ticks")

// echoServer serves Slow.Echo, Fast.Echo and Slow.Ticks (n messages at
// once) on a memory listener "server" of inner.
func echoServer(t *testing.T, inner *memory.Transport) {
	t.Helper()
	srv := dispatch.NewServer()
	echo := func(ctx context.Context, args *int, reply *int) error { *reply = *args; return nil }
	require.NoError(t, dispatch.Handle(srv, "Slow.Echo", echo, dispatch.Borrows()))
	require.NoError(t, dispatch.Handle(srv, "Fast.Echo", echo, dispatch.Borrows()))
	require.NoError(t, ticks.Handle(srv, func(ctx context.Context, n *int, out dispatch.Sender[int]) error {
		for i := range *n {
			if err := out.Send(&i); err != nil {
				return err
			}
		}
		return nil
	}))
	l, err := inner.Listen("server")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() { srv.Close() })
}

// TestMethodRule: through dispatch, a rule for one method delays its
// calls (a second each way: a call takes exactly 2 s) and leaves another
// method's alone; a stream's frames, which carry only their Seq, are
// known by their open frame. The shortcut, asked for, is not taken: the
// wrapper hides the abilities that would find the Server in the process,
// so every call crosses the faults.
func TestMethodRule(t *testing.T) {
	for _, opts := range [][]dispatch.ClientOption{nil, {dispatch.WithShortcut(dispatch.ShortcutDirect)}} {
		synctest.Test(t, func(t *testing.T) {
			n := faultnet.New(1)
			n.Add(faultnet.Rule{Method: "Slow.Echo", Latency: time.Second})
			n.Add(faultnet.Rule{Method: "Slow.Ticks", Dir: faultnet.ToDialler, Latency: time.Second})
			inner := memory.New()
			echoServer(t, inner)
			tr := n.Wrap(inner, "client")
			defer tr.Close()
			c, err := dispatch.Dial(context.Background(), tr, "server", opts...)
			require.NoError(t, err)
			defer c.Close()

			var got int
			start := time.Now()
			require.NoError(t, c.Call(context.Background(), "Fast.Echo", 1, &got))
			assert.Zero(t, time.Since(start), "Fast.Echo")
			require.NoError(t, c.Call(context.Background(), "Slow.Echo", 2, &got))
			assert.Equal(t, 2, got)
			assert.Equal(t, 2*time.Second, time.Since(start), "Slow.Echo")

			start = time.Now()
			i := 0
			for v, err := range ticks.Call(context.Background(), c, 3) {
				require.NoError(t, err)
				assert.Equal(t, i, *v)
				i++
			}
			assert.Equal(t, 3, i)
			assert.Equal(t, time.Second, time.Since(start), "the stream's frames back")
		})
	}
}

// TestDispatchSeesResets: a connection cut under a call fails it with
// dispatch.ErrShutdown, as a network's reset does; the Client dials
// anew for the next call.
func TestDispatchSeesResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := faultnet.New(1)
		inner := memory.New()
		echoServer(t, inner)
		tr := n.Wrap(inner, "client")
		defer tr.Close()
		c, err := dispatch.Dial(context.Background(), tr, "server")
		require.NoError(t, err)
		defer c.Close()
		var got int
		require.NoError(t, c.Call(context.Background(), "Fast.Echo", 1, &got))
		remove := n.Add(faultnet.Rule{Dir: faultnet.ToDialler, CutAfterFrames: 1})
		err = c.Call(context.Background(), "Fast.Echo", 1, &got)
		require.NoError(t, err, "the first reply passes")
		err = c.Call(context.Background(), "Fast.Echo", 1, &got)
		require.ErrorIs(t, err, dispatch.ErrShutdown)
		remove()
		require.NoError(t, c.Call(context.Background(), "Fast.Echo", 1, &got))
	})
}
