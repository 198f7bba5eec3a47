package mux_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
)

// hub is the server side of the tests below: a dispatch.Server on l whose
// Hub.Ask handler calls Agent.Name back on its caller, over Back(l), and
// returns what the agent answered. Every error the call back met is sent
// on errs.
func hub(t *testing.T, l transport.Listener, errs chan<- error) {
	t.Helper()
	back, err := mux.Back(l)
	require.NoError(t, err)
	srv := dispatch.NewServer()
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, dispatch.Handle(srv, "Hub.Ask", func(ctx context.Context, q *string, reply *string) error {
		info, ok := dispatch.CallInfoFrom(ctx)
		if !ok {
			return errors.New("no CallInfo")
		}
		c, err := dispatch.Dial(ctx, back, info.RemoteAddr.String())
		if err == nil {
			defer c.Close()
			err = c.Call(ctx, "Agent.Name", *q, reply)
		}
		if err != nil {
			errs <- err
		}
		return err
	}))
	require.NoError(t, srv.Start(l))
}

// agent serves Agent.Name on in, the dialling end's Incoming.
func agent(t *testing.T, in transport.Listener) {
	t.Helper()
	srv := dispatch.NewServer()
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, dispatch.Handle(srv, "Agent.Name", func(ctx context.Context, q *string, reply *string) error {
		*reply = "agent, asked " + *q
		return nil
	}))
	require.NoError(t, srv.Start(in))
}

// TestBackDispatch: a client calls a server whose handler calls back a
// service the client serves on Incoming, over the connection the client
// made, and returns its answer.
func TestBackDispatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	srvTr := mux.New()
	t.Cleanup(func() { srvTr.Close() })
	l, err := srvTr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	errs := make(chan error, 4)
	hub(t, l, errs)

	tr := mux.New()
	t.Cleanup(func() { tr.Close() })
	agent(t, tr.Incoming())
	c, err := dispatch.Dial(ctx, tr, l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	for _, q := range []string{"once", "twice"} {
		var reply string
		require.NoError(t, c.Call(ctx, "Hub.Ask", q, &reply))
		assert.Equal(t, "agent, asked "+q, reply)
	}
}

// TestBackDispatchConn: the same over one connection the two ends were
// given (NewClientConn, NewServerConn).
func TestBackDispatchConn(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	a, b := net.Pipe()
	ls := make(chan transport.Listener, 1)
	go func() {
		l, err := mux.NewServerConn(ctx, b)
		if assert.NoError(t, err) {
			ls <- l
		}
		close(ls)
	}()
	cc, err := mux.NewClientConn(ctx, a)
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	l := <-ls
	require.NotNil(t, l)
	t.Cleanup(func() { l.Close() })
	errs := make(chan error, 4)
	hub(t, l, errs)
	agent(t, cc.Incoming())

	sock, err := cc.Dial(ctx)
	require.NoError(t, err)
	c, err := dispatch.NewClient(sock)
	require.NoError(t, err)
	defer c.Close()
	var reply string
	require.NoError(t, c.Call(ctx, "Hub.Ask", "over a pipe", &reply))
	assert.Equal(t, "agent, asked over a pipe", reply)
}

// TestBackDispatchNobodyServes: when the client serves nothing, the
// handler's call back fails at once with a connection error
// (dispatch.ErrShutdown), and the client's own call fails with it rather
// than waiting.
func TestBackDispatchNobodyServes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	srvTr := mux.New()
	t.Cleanup(func() { srvTr.Close() })
	l, err := srvTr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	errs := make(chan error, 4)
	hub(t, l, errs)

	tr := mux.New() // no Incoming
	t.Cleanup(func() { tr.Close() })
	c, err := dispatch.Dial(ctx, tr, l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	var reply string
	require.Error(t, c.Call(ctx, "Hub.Ask", "anyone?", &reply))
	require.NoError(t, ctx.Err(), "the call waited for its deadline")
	var backErr error
	select {
	case backErr = <-errs:
	case <-ctx.Done():
		t.Fatal("the handler never called back")
	}
	t.Logf("the call back failed with: %v", backErr)
	assert.ErrorIs(t, backErr, dispatch.ErrShutdown)
	assert.NotErrorIs(t, backErr, context.DeadlineExceeded)
}
