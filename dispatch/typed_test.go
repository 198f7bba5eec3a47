package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// typedEnv is a Client and the Servers it reaches, for the descriptors'
// tests: one Server on each of paths and on the netrpc path, two behind a
// Client of replicas.
type typedEnv struct {
	servers []*dispatch.Server
	client  *dispatch.Client
	streams bool // the path carries streams (net/rpc codecs do not)
}

// register registers what reg registers on every Server of e.
func (e typedEnv) register(t *testing.T, reg func(srv *dispatch.Server) error) {
	t.Helper()
	for _, srv := range e.servers {
		require.NoError(t, reg(srv))
	}
}

// typedPaths are paths, the netrpc path and a Client of two replicas.
func typedPaths() []struct {
	name  string
	setup func(t *testing.T) typedEnv
} {
	var ps []struct {
		name  string
		setup func(t *testing.T) typedEnv
	}
	for _, p := range pathsAndNetRPC() {
		ps = append(ps, struct {
			name  string
			setup func(t *testing.T) typedEnv
		}{p.name, func(t *testing.T) typedEnv {
			e := p.setup(t)
			return typedEnv{servers: []*dispatch.Server{e.server}, client: e.client, streams: e.netrpc == nil}
		}})
	}
	return append(ps, struct {
		name  string
		setup func(t *testing.T) typedEnv
	}{"replicas", func(t *testing.T) typedEnv { return replicasEnv(t) }})
}

// replicasEnv serves two test Servers on tcp, called by one Client of both.
func replicasEnv(t testing.TB) typedEnv {
	tr := tcp.New()
	var e typedEnv
	var addrs []string
	for range 2 {
		srv, _, _ := newServer(t, noInterceptors)
		addrs = append(addrs, serve(t, srv, tr, "127.0.0.1:0"))
		e.servers = append(e.servers, srv)
	}
	c, err := dispatch.Dial(t.Context(), tr, "static:///"+joinAddrs(addrs), dispatch.WithResolver(resolver.Default))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	e.client, e.streams = c, true
	return e
}

// Descriptors of the tests' methods. typedFill is registered through its
// descriptor, with Borrows, so that ShortcutDirect runs it in direct mode;
// typedMultiply and typedAdd (typed_bench_test.go) name methods registered
// by Register and by Handle.
var (
	typedFill = dispatch.NewMethod[Args, Reply]("Typed.Fill")
	typedFail = dispatch.NewMethod[Args, Reply]("Typed.Fail")
)

func registerTyped(srv *dispatch.Server) error {
	err := typedFill.Handle(srv, func(ctx context.Context, args *Args, reply *Reply) error {
		reply.X = args.A * args.B
		reply.S = fmt.Sprint(args.A, "*", args.B)
		reply.List = append(reply.List, args.A, args.B)
		return nil
	}, dispatch.Borrows())
	if err != nil {
		return err
	}
	return typedFail.Handle(srv, func(ctx context.Context, args *Args, reply *Reply) error {
		reply.X = 7 // written, but the call fails: the caller must see zero
		return &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "typed: refused"}
	})
}

// TestTypedCall: a descriptor's Call reaches its handler and returns the
// reply on every path, the handlers of methods registered by Handle and by
// Register alike; an error comes back coded with a zero reply; a caller by
// name reaches the descriptor's handler.
func TestTypedCall(t *testing.T) {
	for _, p := range typedPaths() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			e.register(t, registerTyped)
			ctx := t.Context()
			for range 3 { // replicas: more than one of them answers
				r, err := typedFill.Call(ctx, e.client, Args{6, 7})
				require.NoError(t, err)
				assert.Equal(t, Reply{X: 42, S: "6*7", List: []int{6, 7}}, r)
			}
			n, err := typedMultiply.Call(ctx, e.client, Args{6, 7})
			require.NoError(t, err)
			assert.Equal(t, 42, n)
			n, err = typedAdd.Call(ctx, e.client, Args{6, 7})
			require.NoError(t, err)
			assert.Equal(t, 13, n)

			r, err := typedFail.Call(ctx, e.client, Args{6, 7})
			assert.Zero(t, r)
			var untyped Reply
			assert.Equal(t, e.client.Call(ctx, typedFail.Name(), &Args{6, 7}, &untyped), err)
			if e.streams { // net/rpc carries no code (parity_netrpc_test.go)
				assert.Equal(t, dispatch.CodeFailedPrecondition, codeOf(err), "%v", err)
			}
			assert.ErrorContains(t, err, "typed: refused")

			var byName Reply
			require.NoError(t, e.client.Call(ctx, typedFill.Name(), &Args{2, 3}, &byName))
			assert.Equal(t, 6, byName.X)
		})
	}
}

// TestTypedCallWithInterceptors: a Client's interceptors see a typed call
// as an untyped one (its name, a *A and a *R), and may keep what they see:
// it is not reused by the next call.
func TestTypedCallWithInterceptors(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			e.register(t, registerTyped)
			var seen []any
			ic := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
				err := next(ctx, args, reply)
				seen = append(seen, method, args, reply)
				return err
			}
			opts := append(append([]dispatch.ClientOption(nil), e.opts...), dispatch.WithInterceptors(ic))
			c, err := dispatch.Dial(t.Context(), e.tr, e.addr, opts...)
			require.NoError(t, err)
			defer c.Close()
			for _, a := range []Args{{6, 7}, {2, 3}} {
				_, err := typedFill.Call(t.Context(), c, a)
				require.NoError(t, err)
			}
			require.Len(t, seen, 6)
			assert.Equal(t, []any{"Typed.Fill", &Args{6, 7}, &Reply{X: 42, S: "6*7", List: []int{6, 7}}}, seen[:3])
			assert.Equal(t, []any{"Typed.Fill", &Args{2, 3}, &Reply{X: 6, S: "2*3", List: []int{2, 3}}}, seen[3:])
		})
	}
}

// setup of an env as typedEnv, for the tests that need a path's transport.
func (e *env) register(t *testing.T, reg func(srv *dispatch.Server) error) {
	t.Helper()
	require.NoError(t, reg(e.server))
}

// TestTypedGo: Go starts calls of several methods on one channel; Result
// reads each typed, and refuses a Call of another method.
func TestTypedGo(t *testing.T) {
	for _, p := range typedPaths() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			e.register(t, registerTyped)
			ctx := t.Context()
			done := make(chan *dispatch.Call, 3)
			fill := typedFill.Go(ctx, e.client, Args{6, 7}, done)
			mul := typedMultiply.Go(ctx, e.client, Args{2, 5}, done)
			fail := typedFail.Go(ctx, e.client, Args{1, 1}, done)
			for range 3 {
				recv(t, done, waitLong, "a call's completion")
			}
			r, err := typedFill.Result(fill)
			require.NoError(t, err)
			assert.Equal(t, 42, r.X)
			assert.Equal(t, &Args{6, 7}, fill.Args)
			n, err := typedMultiply.Result(mul)
			require.NoError(t, err)
			assert.Equal(t, 10, n)
			r, err = typedFail.Result(fail)
			assert.ErrorContains(t, err, "typed: refused")
			if e.streams { // net/rpc carries no code (parity_netrpc_test.go)
				assert.Equal(t, dispatch.CodeFailedPrecondition, codeOf(err))
			}
			assert.Zero(t, r)

			_, err = typedFill.Result(mul)
			assert.ErrorContains(t, err, "Result of a Call of Arith.Multiply")
			_, err = typedFail.Result(fill) // the same types, another method
			assert.ErrorContains(t, err, "Result of a Call of Typed.Fill")
			_, err = typedFill.Result(nil)
			assert.ErrorContains(t, err, "nil Call")
		})
	}
}

// TestTypedCallWrongTypes: a descriptor whose types are not the ones the
// server registered gets what an untyped call with those types gets, on
// every path: the decoding error, with its code.
func TestTypedCallWrongTypes(t *testing.T) {
	wrongArgs := dispatch.NewMethod[string, int]("Arith.Multiply")
	wrongReply := dispatch.NewMethod[Args, string]("Arith.Multiply")
	for _, p := range typedPaths() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			ctx := t.Context()

			n, err := wrongArgs.Call(ctx, e.client, "six")
			require.Error(t, err)
			assert.Zero(t, n)
			var untypedN int
			untyped := e.client.Call(ctx, "Arith.Multiply", "six", &untypedN)
			assert.Equal(t, untyped, err)
			if p.name != "netrpc" { // gob's words carry no code (parity_netrpc_test.go)
				assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err), "%v", err)
			}

			s, err := wrongReply.Call(ctx, e.client, Args{6, 7})
			require.Error(t, err)
			assert.Zero(t, s)
			var untypedS string
			untyped = e.client.Call(ctx, "Arith.Multiply", Args{6, 7}, &untypedS)
			assert.Equal(t, untyped, err)
		})
	}
}

// TestTypedNames: a descriptor's name must be a method's full name; each
// constructor panics on a bad one, naming itself, and CheckMethodName says
// why beforehand.
func TestTypedNames(t *testing.T) {
	for _, good := range []string{"Arith.Multiply", "pkg.v1.Svc.Get", "A.b"} {
		assert.NoError(t, dispatch.CheckMethodName(good), good)
		assert.Equal(t, good, dispatch.NewMethod[int, int](good).Name())
	}
	bad := map[string]string{
		"":                `"" is not of the form "Service.Method"`,
		"Multiply":        `"Multiply" is not of the form "Service.Method"`,
		".Multiply":       `".Multiply" is not of the form "Service.Method"`,
		"Arith.":          `"Arith." is not of the form "Service.Method"`,
		"Arith.Multiply ": `"Arith.Multiply " has a space or control character at byte 14`,
		"Arith. Multiply": `has a space or control character at byte 6`,
		"Arith.Mul\x00":   `has a space or control character at byte 9`,
	}
	constructors := map[string]func(string){
		"dispatch.NewMethod":             func(n string) { dispatch.NewMethod[Args, int](n) },
		"dispatch.NewServerStreamMethod": func(n string) { dispatch.NewServerStreamMethod[Args, int](n) },
		"dispatch.NewClientStreamMethod": func(n string) { dispatch.NewClientStreamMethod[Args, int](n) },
		"dispatch.NewBidiStreamMethod":   func(n string) { dispatch.NewBidiStreamMethod[Args, int](n) },
	}
	for name, why := range bad {
		err := dispatch.CheckMethodName(name)
		require.Error(t, err, "%q", name)
		assert.Contains(t, err.Error(), why)
		for ctor, f := range constructors {
			assert.PanicsWithValue(t, ctor+": "+err.Error(), func() { f(name) }, "%s(%q)", ctor, name)
		}
	}
}

// TestTypedRegisteredTwice: a descriptor registered twice on one Server is
// refused the second time, as Handle is, whichever way the name was taken
// first; on another Server it is registered again.
func TestTypedRegisteredTwice(t *testing.T) {
	srv := dispatch.NewServer()
	defer srv.Close()
	fn := func(ctx context.Context, args *Args, reply *Reply) error { return nil }
	require.NoError(t, typedFill.Handle(srv, fn))
	assert.EqualError(t, typedFill.Handle(srv, fn), "dispatch: method Typed.Fill already registered")
	require.NoError(t, dispatch.Handle(srv, "Typed.Fail", fn))
	assert.EqualError(t, typedFail.Handle(srv, fn), "dispatch: method Typed.Fail already registered")
	watch := dispatch.NewServerStreamMethod[Args, int]("Typed.Fill")
	assert.EqualError(t, watch.Handle(srv, func(ctx context.Context, a *Args, out dispatch.Sender[int]) error { return nil }),
		"dispatch: method Typed.Fill already registered")
	assert.EqualError(t, typedFill.Handle(srv, nil), "dispatch: Handle Typed.Fill: nil function")
	assert.EqualError(t, watch.Handle(srv, nil), "dispatch: HandleStream Typed.Fill: nil function")

	other := dispatch.NewServer()
	defer other.Close()
	require.NoError(t, typedFill.Handle(other, fn))
	assert.Equal(t, []string{"Typed.Fill"}, other.Methods())
}

// TestTypedCallContextEnds: a typed call whose context ends returns the
// context's error and a zero reply, and the next call (which may reuse
// what the first lent the Client) is answered rightly.
func TestTypedCallContextEnds(t *testing.T) {
	hold := dispatch.NewMethod[int, int]("Hold.Wait")
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			h := newHolder(t, e.server)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				n, err := hold.Call(ctx, e.client, 5)
				if err == nil || n != 0 {
					err = fmt.Errorf("got %d, %v; want 0 and an error", n, err)
				}
				errc <- err
			}()
			recv(t, h.started, waitLong, "the handler's start")
			cancel()
			err := recv(t, errc, waitLong, "the call's return")
			assert.True(t, errors.Is(err, context.Canceled), "%v", err)
			assert.Equal(t, dispatch.CodeCanceled, codeOf(err))
			h.free()
			n, err := hold.Call(t.Context(), e.client, 9)
			require.NoError(t, err)
			assert.Equal(t, 9, n)
		})
	}
}
