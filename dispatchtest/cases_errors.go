package dispatchtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// The cases of errors that carry more than their words: details, and a
// handler's own call's failure passed on.

// RetryInfo is the detail the cases attach to errors: a type with a
// slice, so that sharing memory between the handler and the caller would
// show.
type RetryInfo struct {
	After   int
	Reasons []string
}

// DetailArgs asks Detail.Fail for N details whose reason is Size bytes
// long, or (Bad) for one detail that cannot be encoded.
type DetailArgs struct {
	N, Size int
	Bad     bool
}

// errTryLater is the sentinel Detail.Fail gives details to: WithDetail
// must leave it as it is.
var errTryLater = &dispatch.Error{Code: dispatch.CodeUnavailable, Message: "detail: try later"}

// registerDetails registers Detail.Fail, which fails with errTryLater and
// the details its arguments ask for. It borrows, so that direct mode
// carries it.
func registerDetails(srv *dispatch.Server) error {
	return dispatch.Handle(srv, "Detail.Fail", func(ctx context.Context, args *DetailArgs, reply *int) error {
		e := errTryLater
		if args.Bad {
			e = e.WithDetail(make(chan int))
		}
		for i := range args.N {
			e = e.WithDetail(RetryInfo{After: i, Reasons: []string{strings.Repeat("x", args.Size)}})
		}
		return e
	}, dispatch.Borrows())
}

// callDetails calls Detail.Fail with args and records the details the
// caller receives, each decoded, and what ErrorDetailAs finds.
func callDetails(args DetailArgs) func(t *testing.T, e *env) Outcome {
	return func(t *testing.T, e *env) Outcome {
		require.NoError(t, registerDetails(e.srv))
		err := e.call(context.Background(), "Detail.Fail", args, new(int))
		o := observe(e, nil, err)
		o.Extra = describeDetails(err)
		assert.Empty(t, errTryLater.Details(), "WithDetail leaves the sentinel as it is")
		return o
	}
}

func describeDetails(err error) string {
	var de *dispatch.Error
	if !errors.As(err, &de) {
		return "not an *Error"
	}
	var parts []string
	for _, d := range de.Details() {
		var r RetryInfo
		derr := d.Decode(&r)
		parts = append(parts, fmt.Sprintf("%s %d %d %v", d.Type, r.After, len(r.Reasons), derr))
	}
	r, ok := dispatch.ErrorDetailAs[RetryInfo](err)
	return fmt.Sprintf("details [%s]; As: %d %v", strings.Join(parts, ", "), r.After, ok)
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
// registered, before runs, and while the call is made, during. The
// outcome is the caller's, with in Extra the error's text as it is
// (observe leaves out the path of the caller's own errors; this one names
// the handler's) and whether it matches ErrShutdown.
func hop(method string, during func(t *testing.T, d *hopDown), before func(d *hopDown)) func(t *testing.T, e *env) Outcome {
	return func(t *testing.T, e *env) Outcome {
		m := memory.New()
		d := &hopDown{srv: dispatch.NewServer()}
		l, err := m.Listen("")
		require.NoError(t, err)
		require.NoError(t, d.srv.Start(l))
		t.Cleanup(func() { d.srv.Close() })
		c, err := dispatch.Dial(context.Background(), m, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutOff))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		d.client = c
		d.held = newHolder(t, d.srv)
		if before != nil {
			before(d) // before Handle, which the handler's goroutine synchronizes with
		}
		require.NoError(t, dispatch.Handle(e.srv, method, func(ctx context.Context, args *Args, reply *int) error {
			err := d.client.Call(ctx, "Hold.Wait", &args.A, reply)
			if err != nil && d.wrap {
				return fmt.Errorf("placing the order: %w", err)
			}
			return err
		}, dispatch.Borrows()))
		reply := intPtr(3)
		errc := callAsync(e, context.Background(), method, Args{A: 1}, reply)
		if during != nil {
			during(t, d)
		}
		err = recv(t, errc, "the call")
		o := observe(e, reply, err)
		if err != nil {
			o.Extra = fmt.Sprintf("%s (matches ErrShutdown: %v)", err, errors.Is(err, dispatch.ErrShutdown))
		}
		return o
	}
}

// wantPassedOn is the outcome of a passed-on failure whose text is msg.
func wantPassedOn(msg string) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
		assert.Equal(t, "*dispatch.Error", o.ErrType)
		assert.Equal(t, dispatch.CodeInternal, o.Code)
		assert.Equal(t, msg+" (matches ErrShutdown: false)", o.Extra)
		assert.Equal(t, ptr(0), o.Reply)
	}
}

var errorCases = []testCase{
	{name: "an error detail crosses", run: callDetails(DetailArgs{N: 1, Size: 3}), check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeUnavailable, "detail: try later")(t, o)
		assert.Equal(t, "details [dispatchtest.RetryInfo 0 1 <nil>]; As: 0 true", o.Extra)
	}},
	{name: "several error details cross, in order", run: callDetails(DetailArgs{N: 3, Size: 3}), check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeUnavailable, "detail: try later")(t, o)
		assert.Equal(t, "details [dispatchtest.RetryInfo 0 1 <nil>, dispatchtest.RetryInfo 1 1 <nil>, dispatchtest.RetryInfo 2 1 <nil>]; As: 0 true", o.Extra)
	}},
	{name: "error details over the bound", run: callDetails(DetailArgs{N: 2, Size: 40000}), check: func(t *testing.T, o Outcome) {
		// Each detail: 1 + 22 bytes of type, 3 + 40,020 of value (a
		// map of After and a one-string Reasons).
		wantErr(dispatch.CodeInternal, "dispatch: error details are too large: 80092 bytes, limit 65536 (the error was: detail: try later)")(t, o)
		assert.Equal(t, "details []; As: 0 false", o.Extra)
	}},
	{name: "an error detail that cannot be encoded", run: callDetails(DetailArgs{N: 1, Bad: true}), check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeInternal, "dispatch: encoding error detail chan int: codec: cannot marshal chan int: msgpack: Encode(unsupported chan int) (the error was: detail: try later)")(t, o)
		assert.Equal(t, "details []; As: 0 false", o.Extra)
	}},
	// A failure of a handler's own call, which the handler returns,
	// reaches its caller as an *Error with CodeInternal that names the
	// method that failed, one hop away — never as the caller's own
	// connection's failure (ErrShutdown).
	{name: "a handler's own call fails: its connection", run: hop("Orders.Conn", func(t *testing.T, d *hopDown) {
		recv(t, d.held.started, "the downstream handler")
		require.NoError(t, d.srv.Close())
	}, nil), check: wantPassedOn("Hold.Wait over memory: connection is shut down: the server closed the connection")},
	{name: "a handler's own call fails: its Client closed", run: hop("Orders.Closed", nil, func(d *hopDown) {
		d.client.Close()
	}), check: wantPassedOn("Hold.Wait over memory: connection is shut down")},
	{name: "a handler's own call fails, wrapped in its words", run: hop("Orders.Wrapped", nil, func(d *hopDown) {
		d.client.Close()
		d.wrap = true
	}), check: wantPassedOn("placing the order: Hold.Wait over memory: connection is shut down")},
}
