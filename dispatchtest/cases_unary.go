package dispatchtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// The unary cases: the rules of a call on every path — results, the
// receiver's shapes, the nil rule, errors and their codes, panics,
// names, decoding, deadlines and cancellation, copies, metadata.

// call is a case that calls method with args into reply.
func call(method string, args any, reply any) func(t *testing.T, e *env) Outcome {
	return func(t *testing.T, e *env) Outcome {
		err := e.call(context.Background(), method, args, reply)
		return observe(e, reply, err)
	}
}

func wantReply(s string) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, s, o.Reply)
	}
}

func wantErr(code dispatch.Code, msg string) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
		assert.Equal(t, "*dispatch.Error", o.ErrType)
		assert.Equal(t, code, o.Code)
		assert.Equal(t, msg, o.Err)
	}
}

func intPtr(v int) *int { return &v }

func ptr(v int) string { return fmt.Sprint(v) }

// blind calls Arith.SleepBlind, which never looks at its context, under
// a context from mk; once the handler has started it calls end (nil: the
// context ends by its deadline), records that the call returned before
// the handler did, then lets the handler go. A deadline that passes
// before the request reaches the Server — a loaded machine may stall the
// caller that long — is the case "deadline already passed", whose handler
// never runs: that try is made again, with twice the time.
func blind(t *testing.T, e *env, mk func(timeout time.Duration) (context.Context, context.CancelFunc), end func(context.CancelFunc)) Outcome {
	a := e.svc.arith
	defer a.release()
	for timeout := 30 * time.Millisecond; ; timeout *= 2 {
		ctx, cancel := mk(timeout)
		defer cancel()
		reply := intPtr(5)
		errc := make(chan error, 1)
		go func() { errc <- e.call(ctx, "Arith.SleepBlind", Args{A: int(waitLong / time.Millisecond)}, reply) }()
		var err error
		select {
		case <-a.blindStarted:
		case err = <-errc:
			if end == nil && timeout < 2*time.Second {
				t.Logf("the deadline of %v passed before the handler ran; again", timeout)
				e.svc.rec.take()
				continue
			}
			t.Fatalf("the call ended before its handler started: %v", err)
		}
		if end != nil {
			end(cancel)
		}
		select {
		case err = <-errc:
		case <-time.After(waitLong / 2):
			t.Fatal("the call did not return while its handler ran")
		}
		o := observe(e, reply, err)
		// The handler waits for its release: the call returned before it.
		o.Extra = "returned before the handler"
		a.release()
		o.Interceptor = e.svc.rec.waitFor(o.Interceptor, "<outer")
		return o
	}
}

var unaryCases = []testCase{
	{name: "value args", run: call("Arith.Multiply", Args{6, 7}, new(int)), check: wantReply(ptr(42))},
	{name: "pointer args to value method", run: call("Arith.Multiply", &Args{6, 7}, new(int)), check: wantReply(ptr(42))},
	{name: "pointer args", run: call("Arith.MultiplyPtr", &Args{3, 5}, new(int)), check: wantReply(ptr(15))},
	{name: "value args to pointer method", run: call("Arith.MultiplyPtr", Args{3, 5}, new(int)), check: wantReply(ptr(15))},
	{name: "nil args", run: call("Arith.Multiply", nil, intPtr(9)), check: wantReply(ptr(0))},
	{name: "generic handler", run: call("Gen.Add", &Args{2, 3}, new(int)), check: wantReply(ptr(5))},
	{name: "struct reply", run: call("Arith.Fill", Args{4, 5}, &Reply{}), check: wantReply("{X:4 S:5 List:[4 5]}")},
	{name: "reply zeroed first", run: call("Arith.Fill", Args{4, 5}, &Reply{X: 99, S: "old", List: []int{1, 2, 3}}), check: wantReply("{X:4 S:5 List:[4 5]}")},
	{name: "zero reply", run: call("Arith.Nothing", Args{}, &Reply{X: 99, S: "old"}), check: wantReply("{X:0 S: List:[]}")},
	{name: "handler error", run: call("Arith.Fail", Args{}, &Reply{X: 1}), check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeUnknown, "arith: boom")(t, o)
		assert.Equal(t, "{X:0 S: List:[]}", o.Reply, "a failed call leaves the reply zero")
	}},
	{name: "handler error with code", run: call("Arith.FailCode", Args{}, new(int)), check: wantErr("custom", "arith: custom failure")},
	{name: "a sentinel error crosses", run: func(t *testing.T, e *env) Outcome {
		err := e.call(context.Background(), "Arith.Sentinel", Args{}, new(int))
		o := observe(e, nil, err)
		o.Extra = fmt.Sprintf("errors.Is: %v", errors.Is(err, errNoFunds))
		return o
	}, check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeFailedPrecondition, "bank: insufficient funds")(t, o)
		assert.Equal(t, "errors.Is: true", o.Extra)
	}},
	{name: "handler panic", run: call("Arith.Panic", Args{}, new(int)), check: wantErr(dispatch.CodeInternal, "dispatch: panic in Arith.Panic: kaboom")},
	{name: "unknown service", run: call("Nope.Multiply", Args{}, new(int)), check: wantErr(dispatch.CodeNotFound, "rpc: can't find service Nope.Multiply")},
	{name: "unknown method", run: call("Arith.Nope", Args{}, new(int)), check: wantErr(dispatch.CodeNotFound, "rpc: can't find method Arith.Nope")},
	{name: "unexported method", run: call("Arith.notExported", Args{}, new(int)), check: wantErr(dispatch.CodeNotFound, "rpc: can't find method Arith.notExported")},
	{name: "ill-formed name", run: call("ArithMultiply", Args{}, new(int)), check: wantErr(dispatch.CodeInvalidArgument, "rpc: service/method request ill-formed: ArithMultiply")},
	{name: "wrong args type", run: call("Arith.Multiply", "not args", new(int)), check: func(t *testing.T, o Outcome) {
		assert.Equal(t, dispatch.CodeInvalidArgument, o.Code)
		assert.True(t, strings.HasPrefix(o.Err, "dispatch: decoding arguments of Arith.Multiply: "), o.Err)
	}},
	{name: "arguments of another type", run: call("Arith.Multiply", Reply{X: 1, S: "s"}, new(int)), check: func(t *testing.T, o Outcome) {
		assert.Equal(t, dispatch.CodeInvalidArgument, o.Code)
		assert.Equal(t, `dispatch: decoding arguments of Arith.Multiply: codec: no fields matched: the map's keys ["X" "S" "List"] name no field of type dispatchtest.Args`, o.Err)
	}},
	{name: "nil reply", run: call("Arith.Multiply", Args{}, nil), check: func(t *testing.T, o Outcome) {
		assert.Equal(t, dispatch.ErrNilReply.Error(), o.Err)
		assert.Empty(t, o.Interceptor, "no call is made")
	}},
	{name: "typed nil reply", run: call("Arith.Multiply", Args{}, (*int)(nil)), check: func(t *testing.T, o Outcome) {
		assert.Equal(t, dispatch.ErrNilReply.Error(), o.Err)
	}},
	{name: "raw bodies", run: call("Arith.Echo", []byte("\x00raw\xff"), new([]byte)), check: wantReply("[0 114 97 119 255]")},
	{name: "deadline exceeded", timed: true, run: func(t *testing.T, e *env) Outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		reply := intPtr(5)
		err := e.call(ctx, "Arith.Sleep", Args{A: 5000}, reply)
		o := observe(e, reply, err)
		// The caller may return before the handler does: timing, not
		// outcome. Wait for the handler, then compare what it saw.
		o.Interceptor = e.svc.rec.waitFor(o.Interceptor, "<outer")
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.True(t, o.IsDeadline)
		wantErr(dispatch.CodeDeadlineExceeded, "Arith.Sleep over <path>: context deadline exceeded")(t, o)
		assert.Equal(t, ptr(0), o.Reply)
	}},
	{name: "deadline, handler blind to its context", timed: true, run: func(t *testing.T, e *env) Outcome {
		return blind(t, e, func(d time.Duration) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), d)
		}, nil)
	}, check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeDeadlineExceeded, "Arith.SleepBlind over <path>: context deadline exceeded")(t, o)
		assert.Equal(t, ptr(0), o.Reply)
		assert.Equal(t, "returned before the handler", o.Extra)
	}},
	{name: "cancel, handler blind to its context", run: func(t *testing.T, e *env) Outcome {
		return blind(t, e, func(time.Duration) (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, func(cancel context.CancelFunc) { cancel() })
	}, check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeCanceled, "Arith.SleepBlind over <path>: context canceled")(t, o)
		assert.Equal(t, ptr(0), o.Reply)
		assert.Equal(t, "returned before the handler", o.Extra)
	}},
	{name: "caller reuses args and reply after an early return", timed: true, run: func(t *testing.T, e *env) Outcome {
		// The deadline passes while the handler runs: it is held until
		// the caller has reused its values, so it cannot answer
		// first. A deadline that passes before the request reaches
		// the Server — the caller stalled that long, as a loaded
		// machine may make it — is the case "deadline already
		// passed", whose handler never runs: that try is made again,
		// with twice the time.
		a := e.svc.arith
		for timeout := 20 * time.Millisecond; ; timeout *= 2 {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			args := &Delayed{Delay: 10_000, Data: []byte("caller's")}
			reply := &Blob{Data: make([]byte, 0, 64)}
			err := e.call(ctx, "Arith.SlowEcho", args, reply)
			cancel()
			o := observe(e, nil, err)
			select {
			case <-a.echoStarted:
			case <-time.After(2 * time.Second):
				if timeout < 2*time.Second {
					t.Logf("the deadline of %v passed before the handler ran; again", timeout)
					continue
				}
				t.Fatalf("the handler never ran: %v", err)
			}
			// The handler is still running: under -race, any memory of
			// the caller's it still held would be reported here.
			args.Data[0] = 'C'
			args.Data = nil
			reply.Data = append(reply.Data[:0], "mine"...)
			o.Extra = string(reply.Data)
			a.echoRelease <- struct{}{}
			o.Interceptor = e.svc.rec.waitFor(o.Interceptor, "<outer")
			return o
		}
	}, check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeDeadlineExceeded, "Arith.SlowEcho over <path>: context deadline exceeded")(t, o)
		assert.Equal(t, "mine", o.Extra)
	}},
	{name: "a handler that keeps its args", run: func(t *testing.T, e *env) Outcome {
		args := Tagged{Name: "k", Tags: map[string]string{"a": "1"}}
		reply := new(int)
		err := e.call(context.Background(), "Keeper.Keep", args, reply)
		o := observe(e, reply, err)
		args.Tags["a"] = "changed by the caller"
		o.Extra = e.svc.keeper.snapshot()
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "kept=map[a:1] own=map[mine:yes]", o.Extra)
	}},
	{name: "a handler that returns its own state", run: func(t *testing.T, e *env) Outcome {
		if err := e.call(context.Background(), "Keeper.Keep", Tagged{Tags: map[string]string{"a": "1"}}, new(int)); err != nil {
			t.Fatal(err)
		}
		e.svc.rec.take()
		reply := new(Tagged)
		err := e.call(context.Background(), "Keeper.State", Args{}, reply)
		o := observe(e, reply, err)
		reply.Tags["mine"] = "changed by the caller"
		o.Extra = e.svc.keeper.snapshot()
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "kept=map[a:1] own=map[mine:yes]", o.Extra)
	}},
	{name: "oversize args", run: func(t *testing.T, e *env) Outcome {
		reply := intPtr(3)
		err := e.call(context.Background(), "Keeper.Len", Blob{Data: make([]byte, e.limit()+1)}, reply)
		o := observe(e, reply, err)
		o.Extra = fmt.Sprintf("frame too large: %v", errors.Is(err, transport.ErrFrameTooLarge))
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Equal(t, "frame too large: true", o.Extra)
		assert.Equal(t, ptr(0), o.Reply)
		assert.Empty(t, o.Interceptor, "the handler never runs")
	}},
	{name: "a listener of another protocol", run: func(t *testing.T, e *env) Outcome {
		if e.b.OtherProtocol == nil {
			t.Fatalf("path %s has no OtherProtocol and declares no difference that says why (OneProtocol, NoPreface)", e.b.Name())
		}
		err := e.b.OtherProtocol(t, e.srv)
		o := observe(e, nil, err)
		o.Err, o.ErrType = "", "" // the text names the two protocols, which differ by path
		o.Extra = fmt.Sprintf("dial failed: %v, protocol error: %v", err != nil, errors.Is(err, transport.ErrProtocol))
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Equal(t, "dial failed: true, protocol error: true", o.Extra)
	}},
	{name: "deadline already passed", run: func(t *testing.T, e *env) Outcome {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		reply := new(int)
		err := e.call(ctx, "Arith.Multiply", Args{2, 2}, reply)
		return observe(e, reply, err)
	}, check: func(t *testing.T, o Outcome) {
		assert.True(t, o.IsDeadline)
		assert.Empty(t, o.Interceptor, "the handler never runs")
	}},
	{name: "cancellation reaches the handler", run: func(t *testing.T, e *env) Outcome {
		a := e.svc.arith
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		reply := new(int)
		go func() { errc <- e.call(ctx, "Arith.Block", Args{}, reply) }()
		select {
		case <-a.started:
		case err := <-errc:
			t.Fatalf("the call ended before its handler started: %v", err)
		}
		cancel()
		err := <-errc
		o := observe(e, reply, err)
		select {
		case herr := <-a.canceled:
			o.Extra = "handler saw: " + herr.Error()
		case <-time.After(waitLong):
			o.Extra = "handler context never ended"
		}
		o.Interceptor = e.svc.rec.waitFor(o.Interceptor, "<outer")
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.True(t, o.IsCanceled)
		wantErr(dispatch.CodeCanceled, "Arith.Block over <path>: context canceled")(t, o)
		assert.Equal(t, "handler saw: context canceled", o.Extra)
	}},
	{name: "deadline and metadata reach the handler, nothing else does", run: func(t *testing.T, e *env) Outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = context.WithValue(ctx, foreignKey{}, "secret")
		reply := new(CtxInfo)
		err := e.caller.Call(ctx, Call{Method: "Arith.Context", Args: Args{A: 5000}, Reply: reply,
			Metadata: dispatch.Metadata{"user": "alice", "ключ": "значение", "trace": "t-1"}})
		return observe(e, reply, err)
	}, check: wantReply("{HasDeadline:true DeadlineSane:true Metadata:map[trace:t-1 user:alice ключ:значение] SawForeign:false}")},
	{name: "no deadline, no metadata", run: call("Arith.Context", Args{A: 1}, new(CtxInfo)),
		check: wantReply("{HasDeadline:false DeadlineSane:false Metadata:map[] SawForeign:false}")},
	{name: "body near the frame limit", run: func(t *testing.T, e *env) Outcome {
		data := bytes.Repeat([]byte{0xab}, e.limit()-1024)
		reply := new(Blob)
		err := e.call(context.Background(), "Arith.EchoBlob", &Blob{Data: data}, reply)
		o := observe(e, nil, err)
		o.Extra = fmt.Sprintf("same=%v", bytes.Equal(reply.Data, data))
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "same=true", o.Extra)
	}},
}
