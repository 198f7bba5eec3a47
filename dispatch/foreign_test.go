package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// The exported seam for protocols of other packages (foreign.go), tested
// with a protocol made of plain values: JSON arguments decoded by the test,
// a stream end over slices.

// Pair and ForeignArith are exported, as Register requires.
type Pair struct{ A, B int }

// ForeignArith is a service of net/rpc's shape.
type ForeignArith struct{}

func (ForeignArith) Add(args Pair, reply *int) error { *reply = args.A + args.B; return nil }

var (
	httpPeer  = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5555}
	httpLocal = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
)

func foreignInfo(method string) dispatch.CallInfo {
	return dispatch.CallInfo{Method: method, Path: dispatch.PathHTTP, RemoteAddr: httpPeer, LocalAddr: httpLocal}
}

// incoming describes a call of method that a protocol read, with the
// caller's metadata md.
func incoming(method string, md dispatch.Metadata) dispatch.IncomingCall {
	return dispatch.IncomingCall{Info: foreignInfo(method), Metadata: md}
}

// foreignServer returns a Server that is closed when the test ends, which
// ends its workers.
func foreignServer(t *testing.T, opts ...dispatch.ServerOption) *dispatch.Server {
	srv := dispatch.NewServer(opts...)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// decodeJSON is a protocol's decoding of a request body.
func decodeJSON(body string) func(any) error {
	return func(args any) error { return json.Unmarshal([]byte(body), args) }
}

func TestForeignMethodInfo(t *testing.T) {
	srv := foreignServer(t)
	require.NoError(t, srv.RegisterName("Arith", ForeignArith{}))
	require.NoError(t, dispatch.Handle(srv, "Echo.Say", func(ctx context.Context, a *string, r *[]string) error { return nil }))
	require.NoError(t, dispatch.HandleStream(srv, "Echo.Stream", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error { return nil }))

	info, ok := srv.Method("Arith.Add")
	require.True(t, ok)
	assert.Equal(t, dispatch.MethodInfo{Name: "Arith.Add", Args: reflect.TypeFor[Pair](), Reply: reflect.TypeFor[int]()}, info)
	_, ok = srv.Method("Arith.Nope")
	assert.False(t, ok)

	infos := srv.MethodInfos()
	assert.Equal(t, []dispatch.MethodInfo{
		{Name: "Arith.Add", Args: reflect.TypeFor[Pair](), Reply: reflect.TypeFor[int]()},
		{Name: "Echo.Say", Args: reflect.TypeFor[string](), Reply: reflect.TypeFor[[]string]()},
		{Name: "Echo.Stream", Args: reflect.TypeFor[Pair](), Reply: reflect.TypeFor[int](), Stream: true},
	}, infos)
}

func TestForeignInvoke(t *testing.T) {
	var intercepted []string
	srv := foreignServer(t, dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		ci, _ := dispatch.CallInfoFrom(ctx)
		intercepted = append(intercepted, method+" "+string(ci.Path))
		return next(ctx, args, reply)
	}))
	type seen struct {
		info     dispatch.CallInfo
		md       dispatch.Metadata
		deadline time.Time
	}
	var got seen
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, a *Pair, r *int) error {
		got.info, _ = dispatch.CallInfoFrom(ctx)
		got.md = dispatch.MetadataFrom(ctx)
		got.deadline, _ = ctx.Deadline()
		require.NoError(t, dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"answered-by": "calc"}))
		*r = a.A + a.B
		return nil
	}))
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	md := dispatch.Metadata{"trace": "t1"}
	reply, replyMD, err := srv.Invoke(ctx, incoming("Calc.Add", md), decodeJSON(`{"A":2,"B":3}`))
	require.NoError(t, err)
	assert.Equal(t, 5, *reply.(*int))
	assert.Equal(t, dispatch.Metadata{"answered-by": "calc"}, replyMD)
	assert.Equal(t, foreignInfo("Calc.Add"), got.info)
	assert.Equal(t, md, got.md)
	assert.True(t, got.deadline.Equal(deadline), "the handler's deadline is the protocol context's")
	assert.Equal(t, []string{"Calc.Add http"}, intercepted)

	// Registered by reflection, with no context: the same.
	require.NoError(t, srv.RegisterName("Arith", ForeignArith{}))
	reply, replyMD, err = srv.Invoke(context.Background(), incoming("Arith.Add", nil), decodeJSON(`{"A":1,"B":1}`))
	require.NoError(t, err)
	assert.Equal(t, 2, *reply.(*int))
	assert.Nil(t, replyMD)
}

func TestForeignInvokeRefusals(t *testing.T) {
	srv := foreignServer(t)
	require.NoError(t, srv.RegisterName("Arith", ForeignArith{}))
	require.NoError(t, dispatch.HandleStream(srv, "Arith.Stream", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error { return nil }))
	require.NoError(t, dispatch.Handle(srv, "Arith.Fail", func(ctx context.Context, a *Pair, r *int) error {
		require.NoError(t, dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"why": "odd"}))
		return &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "odd"}
	}))
	require.NoError(t, dispatch.Handle(srv, "Arith.Panic", func(ctx context.Context, a *Pair, r *int) error { panic("boom") }))
	require.NoError(t, dispatch.Handle(srv, "Arith.Exit", func(ctx context.Context, a *Pair, r *int) error { runtime.Goexit(); return nil }))
	ran := false
	noDecode := func(any) error { ran = true; return nil }

	for _, tc := range []struct {
		name, method string
		decode       func(any) error
		code         dispatch.Code
		msg          string
		md           dispatch.Metadata
	}{
		{"unknown method", "Arith.Nope", noDecode, dispatch.CodeNotFound, "rpc: can't find method Arith.Nope", nil},
		{"unknown service", "Nope.Add", noDecode, dispatch.CodeNotFound, "rpc: can't find service Nope.Add", nil},
		{"streaming method", "Arith.Stream", noDecode, dispatch.CodeInvalidArgument, "dispatch: Arith.Stream is a streaming method; call it with OpenStream or CallStream", nil},
		{"bad arguments", "Arith.Add", decodeJSON(`{"A":`), dispatch.CodeInvalidArgument, "dispatch: decoding arguments of Arith.Add: unexpected end of JSON input", nil},
		{"refused arguments", "Arith.Add", func(any) error {
			return &dispatch.Error{Code: dispatch.CodeResourceExhausted, Message: "too big"}
		}, dispatch.CodeResourceExhausted, "too big", nil},
		{"handler error", "Arith.Fail", decodeJSON(`{}`), dispatch.CodeFailedPrecondition, "odd", dispatch.Metadata{"why": "odd"}},
		{"panic", "Arith.Panic", decodeJSON(`{}`), dispatch.CodeInternal, "dispatch: panic in Arith.Panic: boom", nil},
		{"goexit", "Arith.Exit", decodeJSON(`{}`), dispatch.CodeInternal, "dispatch: handler of Arith.Exit ended its goroutine (runtime.Goexit)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply, md, err := srv.Invoke(context.Background(), incoming(tc.method, nil), tc.decode)
			assert.Nil(t, reply)
			assert.Equal(t, tc.md, md)
			var e *dispatch.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.code, e.Code)
			assert.Equal(t, tc.msg, e.Message)
		})
	}
	assert.False(t, ran, "arguments are decoded only for a call that was routed")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := srv.Invoke(ctx, incoming("Arith.Add", nil), noDecode)
	assert.Equal(t, dispatch.CodeCanceled, codeOf(err), "a call whose context has ended is refused")
	assert.False(t, ran)

	// No decode: zero arguments.
	reply, _, err := srv.Invoke(context.Background(), incoming("Arith.Add", nil), nil)
	require.NoError(t, err)
	assert.Equal(t, 0, *reply.(*int))

	// A decode that panics is the protocol's panic, and the call it
	// admitted leaves: Shutdown does not wait for it.
	assert.PanicsWithValue(t, "decoder bug", func() {
		srv.Invoke(context.Background(), incoming("Arith.Add", nil), func(any) error { panic("decoder bug") })
	})
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer shutCancel()
	assert.NoError(t, srv.Shutdown(shutCtx))
}

// blocker is a handler that waits for its context's end or its release,
// and tells which came first.
type blocker struct {
	started chan struct{}
	release chan struct{}
	ended   chan error // the handler's context's error, or nil when released
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 1), release: make(chan struct{}), ended: make(chan error, 1)}
}

func (b *blocker) handle(ctx context.Context, a *Pair, r *int) error {
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return ctx.Err()
	case <-b.release:
		b.ended <- nil
		*r = 42
		return nil
	}
}

func TestForeignInvokeContextEnds(t *testing.T) {
	srv := foreignServer(t)
	b := newBlocker()
	require.NoError(t, dispatch.Handle(srv, "Slow.Call", b.handle))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := srv.Invoke(ctx, incoming("Slow.Call", nil), decodeJSON(`{}`))
	assert.Equal(t, dispatch.CodeDeadlineExceeded, codeOf(err))
	assert.ErrorIs(t, recv(t, b.ended, 5*time.Second, "the handler's end"), context.DeadlineExceeded)
	require.NoError(t, srv.Shutdown(context.Background()))
}

func TestForeignInvokeShutdown(t *testing.T) {
	srv := foreignServer(t)
	b := newBlocker()
	require.NoError(t, dispatch.Handle(srv, "Slow.Call", b.handle))
	type result struct {
		reply any
		err   error
	}
	inflight := make(chan result, 1)
	go func() {
		reply, _, err := srv.Invoke(context.Background(), incoming("Slow.Call", nil), decodeJSON(`{}`))
		inflight <- result{reply, err}
	}()
	recv(t, b.started, 5*time.Second, "the handler's start")
	began := make(chan struct{})
	srv.RegisterOnShutdown(func() { close(began) })
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	recv(t, began, 5*time.Second, "Shutdown's start")
	// Once Shutdown has begun, new calls are refused; the one in flight
	// holds Shutdown.
	_, _, err := srv.Invoke(context.Background(), incoming("Slow.Call", nil), decodeJSON(`{}`))
	assert.Equal(t, dispatch.CodeUnavailable, codeOf(err))
	quiet(t, shut, "Shutdown while a call is in flight")
	close(b.release)
	r := recv(t, inflight, 5*time.Second, "the call in flight")
	require.NoError(t, r.err)
	assert.Equal(t, 42, *r.reply.(*int))
	require.NoError(t, recv(t, shut, 5*time.Second, "Shutdown"))
	assert.NoError(t, recv(t, b.ended, time.Second, "the handler's end"))
}

func TestForeignInvokeClose(t *testing.T) {
	srv := foreignServer(t)
	b := newBlocker()
	require.NoError(t, dispatch.Handle(srv, "Slow.Call", b.handle))
	done := make(chan error, 1)
	go func() {
		_, _, err := srv.Invoke(context.Background(), incoming("Slow.Call", nil), decodeJSON(`{}`))
		done <- err
	}()
	recv(t, b.started, 5*time.Second, "the handler's start")
	require.NoError(t, srv.Close())
	assert.Equal(t, dispatch.CodeUnavailable, codeOf(recv(t, done, 5*time.Second, "the call")))
	assert.ErrorIs(t, recv(t, b.ended, 5*time.Second, "the handler's end"), context.Canceled)
}

// sliceStream is a protocol's stream end over plain values: the caller's
// messages as JSON texts, and what the handler sends.
type sliceStream struct {
	mu    sync.Mutex
	in    []string
	out   []int
	fail  error    // Receive's error after in, instead of io.EOF
	ready []string // each Ready, as the messages sent before it
}

func (s *sliceStream) Receive(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.in) == 0 {
		if s.fail != nil {
			return s.fail
		}
		return io.EOF
	}
	body := s.in[0]
	s.in = s.in[1:]
	return json.Unmarshal([]byte(body), m)
}

func (s *sliceStream) Send(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out = append(s.out, *m.(*int))
	return nil
}

func (s *sliceStream) Ready() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = append(s.ready, fmt.Sprint(s.out))
}

// The protocol's Ready is called once, and only when the handler says it
// is ready before its first message: a message, or the end, says it
// otherwise, and a Ready after either is not passed on.
func TestForeignInvokeStreamReady(t *testing.T) {
	srv := foreignServer(t)
	for name, steps := range map[string]string{
		"Ready.Twice":       "RRs",
		"Ready.AfterSend":   "sR",
		"Ready.Never":       "s",
		"Ready.Empty":       "",
		"Ready.BeforeSends": "Rss",
	} {
		require.NoError(t, dispatch.HandleStream(srv, name, func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
			for _, step := range steps {
				if step == 'R' {
					s.Ready()
				} else if err := s.Send(new(1)); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	want := map[string][]string{"Ready.Twice": {"[]"}, "Ready.BeforeSends": {"[]"}}
	for name := range want {
		end := &sliceStream{}
		_, err := srv.InvokeStream(context.Background(), incoming(name, nil), end)
		require.NoError(t, err)
		assert.Equal(t, want[name], end.ready, name)
	}
	for _, name := range []string{"Ready.AfterSend", "Ready.Never", "Ready.Empty"} {
		end := &sliceStream{}
		_, err := srv.InvokeStream(context.Background(), incoming(name, nil), end)
		require.NoError(t, err)
		assert.Empty(t, end.ready, name)
	}

	// A Ready from a goroutine the handler left behind, after it returned,
	// is not passed on: the protocol's end is no longer the handler's.
	late := make(chan *dispatch.ServerStream[Pair, int], 1)
	require.NoError(t, dispatch.HandleStream(srv, "Ready.Late", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		late <- s
		return nil
	}))
	end := &sliceStream{}
	_, err := srv.InvokeStream(context.Background(), incoming("Ready.Late", nil), end)
	require.NoError(t, err)
	(<-late).Ready()
	assert.Empty(t, end.ready)
}

func TestForeignInvokeStream(t *testing.T) {
	var ends []string
	srv := foreignServer(t, dispatch.WithStreamInterceptors(func(ctx context.Context, method string) (context.Context, func(error), error) {
		ci, _ := dispatch.CallInfoFrom(ctx)
		return ctx, func(err error) { ends = append(ends, method+" "+string(ci.Path)+" "+errText(err)) }, nil
	}))
	var md dispatch.Metadata
	require.NoError(t, dispatch.HandleStream(srv, "Sum.Each", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		md = dispatch.MetadataFrom(ctx)
		for p, err := range s.Recv() {
			if err != nil {
				return err
			}
			if p.A < 0 {
				return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "negative"}
			}
			if err := s.Send(new(p.A + p.B)); err != nil {
				return err
			}
		}
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"count": "done"})
	}))

	end := &sliceStream{in: []string{`{"A":1,"B":2}`, `{"B":5}`}}
	replyMD, err := srv.InvokeStream(context.Background(), incoming("Sum.Each", dispatch.Metadata{"k": "v"}), end)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 5}, end.out, "each message decoded into a zero value")
	assert.Equal(t, dispatch.Metadata{"count": "done"}, replyMD)
	assert.Equal(t, dispatch.Metadata{"k": "v"}, md)

	end = &sliceStream{in: []string{`{"A":-1}`}}
	_, err = srv.InvokeStream(context.Background(), incoming("Sum.Each", nil), end)
	assert.Equal(t, dispatch.CodeOutOfRange, codeOf(err))

	end = &sliceStream{in: []string{`{"A":`}}
	_, err = srv.InvokeStream(context.Background(), incoming("Sum.Each", nil), end)
	assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err))
	assert.Contains(t, err.Error(), "dispatch: decoding a message of Sum.Each: ")

	end = &sliceStream{fail: &dispatch.Error{Code: dispatch.CodeResourceExhausted, Message: "message too large"}}
	_, err = srv.InvokeStream(context.Background(), incoming("Sum.Each", nil), end)
	assert.Equal(t, dispatch.CodeResourceExhausted, codeOf(err), "the protocol's *Error keeps its code")

	_, err = srv.InvokeStream(context.Background(), incoming("Sum.Nope", nil), &sliceStream{})
	assert.Equal(t, dispatch.CodeNotFound, codeOf(err))
	require.NoError(t, srv.RegisterName("Arith", ForeignArith{}))
	_, err = srv.InvokeStream(context.Background(), incoming("Arith.Add", nil), &sliceStream{})
	assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err), "a unary method is not a stream")

	assert.Equal(t, []string{"Sum.Each http <nil>", "Sum.Each http negative", "Sum.Each http dispatch: decoding a message of Sum.Each: unexpected end of JSON input", "Sum.Each http message too large"}, ends)
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// blockingStream is an end whose Receive waits for the handler's context,
// as a protocol's read waits for a caller that sends nothing.
type blockingStream struct{ ctx context.Context }

func (s blockingStream) Receive(any) error {
	<-s.ctx.Done()
	return s.ctx.Err()
}
func (blockingStream) Send(any) error { return nil }
func (blockingStream) Ready()         {}

func TestForeignInvokeStreamContextEnds(t *testing.T) {
	srv := foreignServer(t)
	handlerDone := make(chan error, 1)
	require.NoError(t, dispatch.HandleStream(srv, "Wait.Forever", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		<-ctx.Done()
		handlerDone <- ctx.Err()
		return ctx.Err()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := srv.InvokeStream(ctx, incoming("Wait.Forever", nil), blockingStream{ctx})
	assert.Equal(t, dispatch.CodeDeadlineExceeded, codeOf(err))
	// InvokeStream returned only after the handler: its end is no longer used.
	select {
	case err := <-handlerDone:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	default:
		t.Fatal("InvokeStream returned before its handler")
	}
	require.NoError(t, srv.Shutdown(context.Background()))
}

func TestForeignInvokeStreamReceiveEndsWithContext(t *testing.T) {
	srv := foreignServer(t)
	require.NoError(t, dispatch.HandleStream(srv, "Wait.Recv", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		for _, err := range s.Recv() {
			if err != nil {
				return err
			}
		}
		return errors.New("the caller closed its side")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := srv.InvokeStream(ctx, incoming("Wait.Recv", nil), blockingStream{ctx})
	assert.Equal(t, dispatch.CodeCanceled, codeOf(err))
	require.NoError(t, srv.Shutdown(context.Background()))
}
