package dispatch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// outcome is everything a caller and a service can observe of one call.
// The parity suite demands the same outcome on every path.
type outcome struct {
	Reply       string
	Err         string
	ErrType     string
	Code        dispatch.Code
	IsDeadline  bool
	IsCanceled  bool
	Interceptor []string
	Extra       string
}

func observe(e *env, reply any, err error) outcome {
	o := outcome{Reply: "<nil>", Interceptor: e.rec.take()}
	if v := reflect.ValueOf(reply); v.Kind() == reflect.Pointer && !v.IsNil() {
		o.Reply = fmt.Sprintf("%+v", v.Elem())
	}
	if err != nil {
		o.Err = pathless(err.Error())
		o.ErrType = fmt.Sprintf("%T", err)
		var de *dispatch.Error
		if errors.As(err, &de) {
			o.Code = de.Code
		}
		o.IsDeadline = errors.Is(err, context.DeadlineExceeded)
		o.IsCanceled = errors.Is(err, context.Canceled)
	}
	return o
}

type parityCase struct {
	name string
	run  func(t *testing.T, e *env) outcome
	// check asserts what the outcome must be, beyond being the same on
	// every path.
	check func(t *testing.T, o outcome)
	// netrpc says how the outcome on the netrpc path relates to the tcp
	// path's (parity_netrpc_test.go).
	netrpc onNetRPC
}

func call(method string, args any, reply any) func(t *testing.T, e *env) outcome {
	return func(t *testing.T, e *env) outcome {
		err := e.client.Call(context.Background(), method, args, reply)
		return observe(e, reply, err)
	}
}

func wantReply(s string) func(t *testing.T, o outcome) {
	return func(t *testing.T, o outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, s, o.Reply)
	}
}

func wantErr(code dispatch.Code, msg string) func(t *testing.T, o outcome) {
	return func(t *testing.T, o outcome) {
		assert.Equal(t, "*dispatch.Error", o.ErrType)
		assert.Equal(t, code, o.Code)
		assert.Equal(t, msg, o.Err)
	}
}

func intPtr(v int) *int { return &v }

var parityCases = []parityCase{
	{"value args", call("Arith.Multiply", Args{6, 7}, new(int)), wantReply(ptr(42)), sameOnNetRPC},
	{"pointer args to value method", call("Arith.Multiply", &Args{6, 7}, new(int)), wantReply(ptr(42)), sameOnNetRPC},
	{"pointer args", call("Arith.MultiplyPtr", &Args{3, 5}, new(int)), wantReply(ptr(15)), sameOnNetRPC},
	{"value args to pointer method", call("Arith.MultiplyPtr", Args{3, 5}, new(int)), wantReply(ptr(15)), sameOnNetRPC},
	{"nil args", call("Arith.Multiply", nil, intPtr(9)), wantReply(ptr(0)), netrpcNilArgs},
	{"generic handler", call("Gen.Add", &Args{2, 3}, new(int)), wantReply(ptr(5)), sameOnNetRPC},
	{"struct reply", call("Arith.Fill", Args{4, 5}, &Reply{}), wantReply("{X:4 S:5 List:[4 5]}"), sameOnNetRPC},
	{"reply zeroed first", call("Arith.Fill", Args{4, 5}, &Reply{X: 99, S: "old", List: []int{1, 2, 3}}), wantReply("{X:4 S:5 List:[4 5]}"), sameOnNetRPC},
	{"zero reply", call("Arith.Nothing", Args{}, &Reply{X: 99, S: "old"}), wantReply("{X:0 S: List:[]}"), sameOnNetRPC},
	{"handler error", call("Arith.Fail", Args{}, &Reply{X: 1}), func(t *testing.T, o outcome) {
		wantErr(dispatch.CodeUnknown, "arith: boom")(t, o)
		assert.Equal(t, "{X:0 S: List:[]}", o.Reply, "a failed call leaves the reply zero")
	}, sameOnNetRPC},
	{"handler error with code", call("Arith.FailCode", Args{}, new(int)), wantErr("custom", "arith: custom failure"), netrpcCodeLost},
	{"a sentinel error crosses", func(t *testing.T, e *env) outcome {
		err := e.client.Call(context.Background(), "Arith.Sentinel", Args{}, new(int))
		o := observe(e, nil, err)
		o.Extra = fmt.Sprintf("errors.Is: %v", errors.Is(err, errNoFunds))
		return o
	}, func(t *testing.T, o outcome) {
		wantErr(dispatch.CodeFailedPrecondition, "bank: insufficient funds")(t, o)
		assert.Equal(t, "errors.Is: true", o.Extra)
	}, netrpcSentinel},
	{"handler panic", call("Arith.Panic", Args{}, new(int)), wantErr(dispatch.CodeInternal, "dispatch: panic in Arith.Panic: kaboom"), sameOnNetRPC},
	{"unknown service", call("Nope.Multiply", Args{}, new(int)), wantErr(dispatch.CodeNotFound, "rpc: can't find service Nope.Multiply"), sameOnNetRPC},
	{"unknown method", call("Arith.Nope", Args{}, new(int)), wantErr(dispatch.CodeNotFound, "rpc: can't find method Arith.Nope"), sameOnNetRPC},
	{"unexported method", call("Arith.notExported", Args{}, new(int)), wantErr(dispatch.CodeNotFound, "rpc: can't find method Arith.notExported"), sameOnNetRPC},
	{"ill-formed name", call("ArithMultiply", Args{}, new(int)), wantErr(dispatch.CodeInvalidArgument, "rpc: service/method request ill-formed: ArithMultiply"), sameOnNetRPC},
	{"wrong args type", call("Arith.Multiply", "not args", new(int)), func(t *testing.T, o outcome) {
		assert.Equal(t, dispatch.CodeInvalidArgument, o.Code)
		assert.True(t, strings.HasPrefix(o.Err, "dispatch: decoding arguments of Arith.Multiply: "), o.Err)
	}, netrpcWrongArgs},
	{"arguments of another type", call("Arith.Multiply", Reply{X: 1, S: "s"}, new(int)), func(t *testing.T, o outcome) {
		assert.Equal(t, dispatch.CodeInvalidArgument, o.Code)
		assert.Equal(t, `dispatch: decoding arguments of Arith.Multiply: codec: no fields matched: the map's keys ["X" "S" "List"] name no field of type dispatch_test.Args`, o.Err)
	}, netrpcOtherArgs},
	{"nil reply", call("Arith.Multiply", Args{}, nil), func(t *testing.T, o outcome) {
		assert.Equal(t, dispatch.ErrNilReply.Error(), o.Err)
		assert.Empty(t, o.Interceptor, "no call is made")
	}, sameOnNetRPC},
	{"typed nil reply", call("Arith.Multiply", Args{}, (*int)(nil)), func(t *testing.T, o outcome) {
		assert.Equal(t, dispatch.ErrNilReply.Error(), o.Err)
	}, sameOnNetRPC},
	{"raw bodies", call("Arith.Echo", []byte("\x00raw\xff"), new([]byte)), wantReply("[0 114 97 119 255]"), sameOnNetRPC},
	{"deadline exceeded", func(t *testing.T, e *env) outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		reply := intPtr(5)
		err := e.client.Call(ctx, "Arith.Sleep", Args{A: 5000}, reply)
		o := observe(e, reply, err)
		// The caller may return before the handler does: timing, not
		// outcome. Wait for the handler, then compare what it saw.
		o.Interceptor = e.rec.waitFor(o.Interceptor, "<outer")
		return o
	}, func(t *testing.T, o outcome) {
		assert.True(t, o.IsDeadline)
		wantErr(dispatch.CodeDeadlineExceeded, "Arith.Sleep over <path>: context deadline exceeded")(t, o)
		assert.Equal(t, ptr(0), o.Reply)
	}, netrpcNoDeadline},
	{"deadline, handler blind to its context", func(t *testing.T, e *env) outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		reply := intPtr(5)
		start := time.Now()
		err := e.client.Call(ctx, "Arith.SleepBlind", Args{A: 300}, reply)
		o := observe(e, reply, err)
		o.Extra = earlyReturn(start)
		o.Interceptor = e.rec.waitFor(o.Interceptor, "<outer")
		return o
	}, func(t *testing.T, o outcome) {
		wantErr(dispatch.CodeDeadlineExceeded, "Arith.SleepBlind over <path>: context deadline exceeded")(t, o)
		assert.Equal(t, ptr(0), o.Reply)
		assert.Equal(t, "returned before the handler", o.Extra)
	}, sameOnNetRPC},
	{"cancel, handler blind to its context", func(t *testing.T, e *env) outcome {
		select {
		case <-e.arith.blindStarted: // left by an earlier case
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		reply := intPtr(5)
		start := time.Now()
		errc := make(chan error, 1)
		go func() { errc <- e.client.Call(ctx, "Arith.SleepBlind", Args{A: 300}, reply) }()
		select {
		case <-e.arith.blindStarted:
		case err := <-errc:
			t.Fatalf("the call ended before its handler started: %v", err)
		}
		cancel()
		err := <-errc
		o := observe(e, reply, err)
		o.Extra = earlyReturn(start)
		o.Interceptor = e.rec.waitFor(o.Interceptor, "<outer")
		return o
	}, func(t *testing.T, o outcome) {
		wantErr(dispatch.CodeCanceled, "Arith.SleepBlind over <path>: context canceled")(t, o)
		assert.Equal(t, ptr(0), o.Reply)
		assert.Equal(t, "returned before the handler", o.Extra)
	}, sameOnNetRPC},
	{"caller reuses args and reply after an early return", func(t *testing.T, e *env) outcome {
		// The deadline passes while the handler runs: it is held until the
		// caller has reused its values, so it cannot answer first (a
		// handler that merely slept longer than the deadline did, under
		// load, when the context's timer ran late: the call succeeded on
		// that path alone). A deadline that passes before the
		// request reaches the Server — the caller stalled that long, as a
		// loaded machine may make it — is the case "deadline already
		// passed", whose handler never runs: that try is made again, with
		// twice the time.
		for timeout := 20 * time.Millisecond; ; timeout *= 2 {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			args := &Delayed{Delay: 10_000, Data: []byte("caller's")}
			reply := &Blob{Data: make([]byte, 0, 64)}
			err := e.client.Call(ctx, "Arith.SlowEcho", args, reply)
			cancel()
			o := observe(e, nil, err)
			select {
			case <-e.arith.echoStarted:
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
			e.arith.echoRelease <- struct{}{}
			o.Interceptor = e.rec.waitFor(o.Interceptor, "<outer")
			return o
		}
	}, func(t *testing.T, o outcome) {
		wantErr(dispatch.CodeDeadlineExceeded, "Arith.SlowEcho over <path>: context deadline exceeded")(t, o)
		assert.Equal(t, "mine", o.Extra)
	}, sameOnNetRPC},
	{"a handler that keeps its args", func(t *testing.T, e *env) outcome {
		args := Tagged{Name: "k", Tags: map[string]string{"a": "1"}}
		reply := new(int)
		err := e.client.Call(context.Background(), "Keeper.Keep", args, reply)
		o := observe(e, reply, err)
		args.Tags["a"] = "changed by the caller"
		o.Extra = e.keeper.snapshot()
		return o
	}, func(t *testing.T, o outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "kept=map[a:1] own=map[mine:yes]", o.Extra)
	}, sameOnNetRPC},
	{"a handler that returns its own state", func(t *testing.T, e *env) outcome {
		reply := new(Tagged)
		err := e.client.Call(context.Background(), "Keeper.State", Args{}, reply)
		o := observe(e, reply, err)
		reply.Tags["mine"] = "changed by the caller"
		o.Extra = e.keeper.snapshot()
		return o
	}, func(t *testing.T, o outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "kept=map[a:1] own=map[mine:yes]", o.Extra, "as the case before left it")
	}, sameOnNetRPC},
	{"oversize args", func(t *testing.T, e *env) outcome {
		reply := intPtr(3)
		err := e.client.Call(context.Background(), "Keeper.Len", Blob{Data: make([]byte, e.limit+1)}, reply)
		o := observe(e, reply, err)
		o.Extra = fmt.Sprintf("frame too large: %v", errors.Is(err, transport.ErrFrameTooLarge))
		return o
	}, func(t *testing.T, o outcome) {
		assert.Equal(t, "frame too large: true", o.Extra)
		assert.Equal(t, ptr(0), o.Reply)
		assert.Empty(t, o.Interceptor, "the handler never runs")
	}, netrpcOversize},
	{"a listener of another protocol", func(t *testing.T, e *env) outcome {
		if e.other == nil {
			t.Skip("memory has one protocol: nothing to mismatch")
		}
		tr, addr := e.other(t)
		c, err := dispatch.Dial(context.Background(), tr, addr, e.opts...)
		if c != nil {
			c.Close()
		}
		o := observe(e, nil, err)
		o.Err, o.ErrType = "", "" // the text names the two protocols, which differ by path
		o.Extra = fmt.Sprintf("dial failed: %v, protocol error: %v", err != nil, errors.Is(err, transport.ErrProtocol))
		return o
	}, func(t *testing.T, o outcome) {
		assert.Equal(t, "dial failed: true, protocol error: true", o.Extra)
	}, netrpcNoPreface},
	{"deadline already passed", func(t *testing.T, e *env) outcome {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		reply := new(int)
		err := e.client.Call(ctx, "Arith.Multiply", Args{2, 2}, reply)
		return observe(e, reply, err)
	}, func(t *testing.T, o outcome) {
		assert.True(t, o.IsDeadline)
		assert.Empty(t, o.Interceptor, "the handler never runs")
	}, sameOnNetRPC},
	{"cancellation reaches the handler", func(t *testing.T, e *env) outcome {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		reply := new(int)
		go func() { errc <- e.client.Call(ctx, "Arith.Block", Args{}, reply) }()
		select {
		case <-e.arith.started:
		case err := <-errc:
			t.Fatalf("the call ended before its handler started: %v", err)
		}
		cancel()
		err := <-errc
		o := observe(e, reply, err)
		select {
		case herr := <-e.arith.canceled:
			o.Extra = "handler saw: " + herr.Error()
		case <-time.After(2 * time.Second):
			o.Extra = "handler context never ended"
		}
		o.Interceptor = e.rec.waitFor(o.Interceptor, "<outer")
		return o
	}, func(t *testing.T, o outcome) {
		assert.True(t, o.IsCanceled)
		wantErr(dispatch.CodeCanceled, "Arith.Block over <path>: context canceled")(t, o)
		assert.Equal(t, "handler saw: context canceled", o.Extra)
	}, netrpcNoDeadline},
	{"deadline and metadata reach the handler, nothing else does", func(t *testing.T, e *env) outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = context.WithValue(ctx, foreignKey{}, "secret")
		ctx = dispatch.WithMetadata(ctx, dispatch.Metadata{"user": "alice", "ключ": "значение"})
		ctx = dispatch.WithMetadata(ctx, dispatch.Metadata{"trace": "t-1"})
		reply := new(CtxInfo)
		err := e.client.Call(ctx, "Arith.Context", Args{A: 5000}, reply)
		return observe(e, reply, err)
	}, wantReply("{HasDeadline:true DeadlineSane:true Metadata:map[trace:t-1 user:alice ключ:значение] SawForeign:false}"), netrpcNoCtxValues},
	{"no deadline, no metadata", call("Arith.Context", Args{A: 1}, new(CtxInfo)),
		wantReply("{HasDeadline:false DeadlineSane:false Metadata:map[] SawForeign:false}"), sameOnNetRPC},
	{"body near the frame limit", func(t *testing.T, e *env) outcome {
		data := bytes.Repeat([]byte{0xab}, e.limit-1024)
		reply := new(Blob)
		err := e.client.Call(context.Background(), "Arith.EchoBlob", &Blob{Data: data}, reply)
		o := observe(e, nil, err)
		o.Extra = fmt.Sprintf("same=%v", bytes.Equal(reply.Data, data))
		return o
	}, func(t *testing.T, o outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "same=true", o.Extra)
	}, sameOnNetRPC},
	// The rows below need a Server of their own; parity_limits_test.go has
	// what they share.
	{"request metadata of 1,100 entries", requestMetadataRefused(manyEntries(1100)), wantRequestRefused("1102 header entries, limit 1024"), netrpcRequestMetadata},
	{"request metadata over the frame limit", requestMetadataRefused(bigMetadata()), wantRequestRefused(`\d+ bytes, limit 4194304`), netrpcRequestMetadata},
	{"the server closed mid-call", serverClosedMidCall, func(t *testing.T, o outcome) {
		assert.Equal(t, "Hold.Wait over <path>: "+theServerClosed, o.Extra)
	}, sameOnNetRPC},
	{"request over the server's frame limit", requestOverServerLimit, func(t *testing.T, o outcome) {
		assert.Equal(t, "Big.Len over <path>: "+theServerClosed+", handler ran: false", o.Extra)
	}, netrpcServerLimit},
	{"reply over the client's frame limit", replyOverClientLimit, func(t *testing.T, o outcome) {
		assert.Equal(t, "Big.Make over <path>: connection is shut down: transport: frame too large: peer announced 102430 bytes, limit 65536 (frame too large: true, shut down: true), reply of 0", o.Extra)
	}, netrpcClientLimit},
	{"reply metadata of 1,100 entries", replyMetadataRefused(manyEntries(1100)), wantReplyRefused(`110[23] header entries, limit 1024`), netrpcReplyMetadata},
	{"reply metadata over the frame limit", replyMetadataRefused(bigMetadata()), wantReplyRefused(`\d+ bytes, limit 4194304`), netrpcReplyMetadata},
	{"a handler's changes to its metadata are its own", handlerChangesItsMetadata, func(t *testing.T, o outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "map[k:handler's new:handler's]", o.Reply)
		assert.Equal(t, "interceptor before: map[k:caller's]; interceptor after: map[k:caller's]; caller's: map[k:caller's]", o.Extra)
	}, netrpcNoMetadata},
}

func ptr(v int) string { return fmt.Sprint(v) }

// earlyReturn says whether a call that started at start, of a handler that
// sleeps 300 ms, returned well before the handler could have.
func earlyReturn(start time.Time) string {
	if time.Since(start) < 200*time.Millisecond {
		return "returned before the handler"
	}
	return fmt.Sprintf("returned after %v, with the handler", time.Since(start).Round(time.Millisecond))
}

// TestParity runs every case on every path and demands the same outcome;
// on the netrpc path, the outcome the case declares (onNetRPC), from the
// tcp path's.
func TestParity(t *testing.T) {
	results := make(map[string]map[string]outcome) // case -> path -> outcome
	for _, p := range pathsAndNetRPC() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			e.again = p.setup
			for _, c := range parityCases {
				t.Run(c.name, func(t *testing.T) {
					if e.netrpc != nil {
						switch {
						case !c.netrpc.decided:
							t.Fatalf("case %q does not say how its outcome on netrpc relates to tcp's: give it sameOnNetRPC, differsOnNetRPC or notOnNetRPC", c.name)
						case c.netrpc.why != "" && c.netrpc.want == nil:
							t.Skip("not on net/rpc: " + c.netrpc.why)
						}
					}
					o := c.run(t, e)
					if e.netrpc == nil || c.netrpc.why == "" {
						// On netrpc, only an outcome that does not differ
						// is the one check asserts.
						c.check(t, o)
					}
					if results[c.name] == nil {
						results[c.name] = make(map[string]outcome)
					}
					results[c.name][p.name] = o
				})
			}
		})
	}
	for _, c := range parityCases {
		// Compare with the first path that ran the case (a case may skip a
		// path it has no meaning on).
		var base outcome
		baseName := ""
		for _, p := range paths {
			got, ok := results[c.name][p.name]
			switch {
			case !ok:
			case baseName == "":
				base, baseName = got, p.name
			default:
				assert.Equal(t, base, got, "case %q: %s differs from %s", c.name, p.name, baseName)
			}
		}
		// netrpc shows tcp's outcome, through the difference the case
		// declares.
		got, ok := results[c.name][netrpcPath.name]
		if !ok {
			continue
		}
		want, ok := results[c.name]["tcp"]
		if !assert.True(t, ok, "case %q ran on netrpc and not on tcp: nothing to compare with", c.name) {
			continue
		}
		wants := []outcome{want}
		if c.netrpc.want != nil {
			wants = nil
			for _, f := range c.netrpc.want {
				wants = append(wants, f(want))
			}
		}
		if !slices.ContainsFunc(wants, func(w outcome) bool { return reflect.DeepEqual(w, got) }) {
			assert.Equal(t, wants[0], got, "case %q: netrpc differs from tcp beyond what it declares (%s; %d outcomes allowed)", c.name, c.netrpc.why, len(wants))
		}
	}
}
