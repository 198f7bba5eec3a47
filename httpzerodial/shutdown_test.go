package httpzerodial_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

func TestShutdown(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			c := newCalc(t, srv)
			ts := serve(t, srv)
			type result struct {
				res *connect.Response[int]
				err error
			}
			inflight := make(chan result, 1)
			go func() {
				res, err := client[Pair, int](t, ts, p, "/Calc/Hold").CallUnary(context.Background(), connect.NewRequest(&Pair{}))
				inflight <- result{res, err}
			}()
			recv(t, c.started, "the handler's start")

			began := make(chan struct{})
			srv.RegisterOnShutdown(func() { close(began) })
			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(context.Background()) }()
			recv(t, began, "Shutdown's start")

			// New calls and streams are refused as unavailable...
			_, err := client[Pair, int](t, ts, p, "/Calc/Add").CallUnary(context.Background(), connect.NewRequest(&Pair{}))
			assert.Equal(t, connect.CodeUnavailable, codeOf(t, err))
			_, _, err = count(t, client[Pair, int](t, ts, p, "/Calc/Count"), 1, nil)
			assert.Equal(t, connect.CodeUnavailable, codeOf(t, err))
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned with a call in flight: %v", err)
			default:
			}
			// ...while the one in flight finishes, and then Shutdown.
			close(c.release)
			r := recv(t, inflight, "the call in flight")
			require.NoError(t, r.err)
			assert.Equal(t, 42, *r.res.Msg)
			require.NoError(t, recv(t, shut, "Shutdown"))
		})
	}
}

func TestClose(t *testing.T) {
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	ts := serve(t, srv)
	done := make(chan error, 1)
	go func() {
		_, err := client[Pair, int](t, ts, protocols[0], "/Calc/Hold").CallUnary(context.Background(), connect.NewRequest(&Pair{}))
		done <- err
	}()
	recv(t, c.started, "the handler's start")
	require.NoError(t, srv.Close())
	assert.Equal(t, connect.CodeUnavailable, codeOf(t, recv(t, done, "the call")))
	assert.ErrorIs(t, recv(t, c.ended, "the handler's end"), context.Canceled, "Close ends the handler's context")
}
