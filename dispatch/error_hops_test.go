package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// A failure of a handler's own call, which the handler returns, reaches
// its caller as an *Error with CodeInternal that names the method that
// failed, one hop away — never as the caller's own connection's failure
// (ErrShutdown), on every path. Before, the caller got CodeUnknown and the
// words of a local ErrShutdown, "connection is shut down: the server
// closed the connection", with nothing to say it came from elsewhere.
func init() {
	parityCases = append(parityCases,
		parityCase{"a handler's own call fails: its connection", hop("Orders.Conn", func(t *testing.T, d *hopDown) {
			recv(t, d.held.started, waitLong, "the downstream handler")
			require.NoError(t, d.srv.Close())
		}, nil), wantPassedOn("Hold.Wait over memory: connection is shut down: the server closed the connection"), netrpcCodeLost},
		parityCase{"a handler's own call fails: its Client closed", hop("Orders.Closed", nil, func(d *hopDown) {
			d.client.Close()
		}), wantPassedOn("Hold.Wait over memory: connection is shut down"), netrpcCodeLost},
		parityCase{"a handler's own call fails, wrapped in its words", hop("Orders.Wrapped", nil, func(d *hopDown) {
			d.client.Close()
			d.wrap = true
		}), wantPassedOn("placing the order: Hold.Wait over memory: connection is shut down"), netrpcCodeLost},
	)
}

// hopDown is the downstream of a handler: a Server with Hold.Wait and the
// handler's Client of it, over memory whatever the caller's path.
type hopDown struct {
	srv    *dispatch.Server
	held   *holder
	client *dispatch.Client
	wrap   bool // the handler wraps the error in words of its own
}

// hop registers method on e's Server, a handler that calls Hold.Wait
// downstream and returns what that call returns; before the handler is
// registered, before runs, and while the call is made, during. The row's outcome is the
// caller's, with in Extra the error's text as it is (observe leaves out
// the path of the caller's own errors; this one names the handler's) and
// whether it matches ErrShutdown.
func hop(method string, during func(t *testing.T, d *hopDown), before func(d *hopDown)) func(t *testing.T, e *env) outcome {
	return func(t *testing.T, e *env) outcome {
		m := memory.New()
		d := &hopDown{srv: dispatch.NewServer()}
		addr := serve(t, d.srv, m, "")
		c, err := dispatch.Dial(context.Background(), m, addr, dispatch.WithShortcut(dispatch.ShortcutOff))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		d.client = c
		d.held = newHolder(t, d.srv)
		if before != nil {
			before(d) // before Handle, which the handler's goroutine synchronizes with
		}
		require.NoError(t, dispatch.Handle(e.server, method, func(ctx context.Context, args *Args, reply *int) error {
			err := d.client.Call(ctx, "Hold.Wait", &args.A, reply)
			if err != nil && d.wrap {
				return fmt.Errorf("placing the order: %w", err)
			}
			return err
		}, dispatch.Borrows()))
		reply := intPtr(3)
		errc := callAsync(e.client, context.Background(), method, Args{A: 1}, reply)
		if during != nil {
			during(t, d)
		}
		err = recv(t, errc, waitLong, "the call")
		o := observe(e, reply, err)
		if err != nil {
			o.Extra = fmt.Sprintf("%s (matches ErrShutdown: %v)", err, errors.Is(err, dispatch.ErrShutdown))
		}
		return o
	}
}

// wantPassedOn is the outcome of a passed-on failure whose text is msg.
func wantPassedOn(msg string) func(t *testing.T, o outcome) {
	return func(t *testing.T, o outcome) {
		assert.Equal(t, "*dispatch.Error", o.ErrType)
		assert.Equal(t, dispatch.CodeInternal, o.Code)
		assert.Equal(t, msg+" (matches ErrShutdown: false)", o.Extra)
		assert.Equal(t, ptr(0), o.Reply)
	}
}

// A call's own failures name it and the path it took: the end of its
// context (an *Error with the context's code) and its closed Client's
// ErrShutdown (not an *Error). Before, both were the bare words of the
// context or of ErrShutdown.
func TestOwnFailuresNameTheCall(t *testing.T) {
	for _, p := range pathsAndNetRPC() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
			defer cancel()
			err := e.client.Call(ctx, "Arith.Multiply", Args{2, 3}, new(int))
			assert.EqualError(t, err, "Arith.Multiply over "+p.name+": context deadline exceeded")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, dispatch.CodeDeadlineExceeded, codeOf(err))

			require.NoError(t, e.client.Close())
			err = e.client.Call(context.Background(), "Arith.Multiply", Args{2, 3}, new(int))
			assert.EqualError(t, err, "Arith.Multiply over "+p.name+": connection is shut down")
			assert.ErrorIs(t, err, dispatch.ErrShutdown)
			var de *dispatch.Error
			assert.False(t, errors.As(err, &de), "a Client's own failure is not an *Error")
		})
	}
}
