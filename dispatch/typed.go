package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"
)

// Typed methods. A descriptor (NewMethod, and for streams
// NewServerStreamMethod, NewClientStreamMethod, NewBidiStreamMethod) fixes a
// method's name and its types in one declaration that the server and every
// caller share, so that the compiler checks both ends: a caller cannot
// misspell the name or pass a reply of another type. It is a thin layer over
// the string-named API (Handle, Call, HandleStream, OpenStream), which stays
// for net/rpc-shaped services: a descriptor's method is registered and
// called exactly as that API would, on every path, and a caller through a
// descriptor and a caller by name reach the same handler.

// CheckMethodName reports whether name is a method's full name,
// "Service.Method", as the descriptors' constructors require: a service and
// a method, both not empty, separated by the last dot, with no space or
// control character. A program that builds names from its input checks them
// here first, since the constructors panic on a bad one.
func CheckMethodName(name string) error {
	if i := strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("dispatch: method name %q has a space or control character at byte %d", name, i)
	}
	if !isMethodName(name) {
		return fmt.Errorf(`dispatch: method name %q is not of the form "Service.Method"`, name)
	}
	return nil
}

// mustMethodName panics, naming the constructor, when name is not a
// method's full name: a descriptor is declared once, at package level, so a
// bad name is a mistake in the program, found when it starts (as
// regexp.MustCompile's).
func mustMethodName(constructor, name string) {
	if err := CheckMethodName(name); err != nil {
		panic(constructor + ": " + err.Error())
	}
}

// Method describes a unary method, its arguments of type A and its reply of
// type R, for both ends: the server registers its handler with Handle, and
// callers call it with Call or Go. Declare it once, where server and callers
// both see it:
//
//	var Multiply = dispatch.NewMethod[Args, int]("Arith.Multiply")
//
// A Method is safe for concurrent use, and serves any number of Servers and
// Clients.
type Method[A, R any] struct {
	name string
	// pairs holds the arguments and reply a call lends the Client, reused
	// from call to call: a call whose values escape to the heap would
	// allocate them every time, where a caller of the untyped Call can keep
	// its own. The Client holds neither once Call returns (the rule of
	// every path), so they may be reused then.
	pairs sync.Pool
}

// typedPair is the arguments and reply of one typed call, in one
// allocation.
type typedPair[A, R any] struct {
	a A
	r R
}

// NewMethod returns the descriptor of the unary method name
// ("Service.Method") whose arguments are an A and whose reply is an R. A
// name not of that form (see CheckMethodName) panics: descriptors are
// declared at package level, so the mistake shows when the program starts,
// as regexp.MustCompile's does.
func NewMethod[A, R any](name string) *Method[A, R] {
	mustMethodName("dispatch.NewMethod", name)
	return &Method[A, R]{name: name}
}

// Name returns the method's full name, "Service.Method".
func (m *Method[A, R]) Name() string { return m.name }

// String returns the method's full name, for logs.
func (m *Method[A, R]) String() string { return m.name }

// Handle registers fn as the method's handler on srv: Handle(srv, m.Name(),
// fn, opts...), with the same rules (a name registered twice is an error,
// Borrows may be given, srv may be serving already).
func (m *Method[A, R]) Handle(srv *Server, fn func(ctx context.Context, args *A, reply *R) error, opts ...RegisterOption) error {
	return Handle(srv, m.name, fn, opts...)
}

// Call calls the method through c with args and returns its reply: the
// Client's Call, on whichever path c takes (the network, the shortcut,
// replicas, a net/rpc codec), with the same errors. On error the reply is
// the zero R. A server that registered the name with other types answers
// as it answers an untyped call of the wrong types: arguments it cannot
// decode fail with CodeInvalidArgument, a reply c cannot decode fails too.
// A nil ctx panics, as Client.Call's does.
//
// A call costs no more than the untyped Call with pointers the caller
// keeps: Call lends the Client values of its own, reused from call to call,
// rather than values that would escape to the heap each time, and needs no
// reflection of its own (on the shortcut in direct mode, a method
// registered by Handle is called with none at either end; elsewhere the
// codec's decoding is what it is for an untyped call).
func (m *Method[A, R]) Call(ctx context.Context, c *Client, args A) (R, error) {
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	if len(c.opts.interceptors) > 0 {
		// An interceptor may keep what it is shown (to log it later, say):
		// it gets values of its own, never reused.
		p := &typedPair[A, R]{a: args}
		err := c.intercepted(ctx, m.name, &p.a, &p.r)
		return p.r, err
	}
	p, _ := m.pairs.Get().(*typedPair[A, R])
	if p == nil {
		p = new(typedPair[A, R])
	}
	p.a = args
	err := c.callChecked(ctx, m.name, &p.a, &p.r, nil) // &p.r is a non-nil pointer
	r := p.r
	*p = typedPair[A, R]{} // keep nothing of the caller's alive in the pool
	m.pairs.Put(p)
	return r, err
}

// Go starts a call of the method through c and returns at once, as
// Client.Go does: the *Call is sent on done when it completes (done must be
// buffered, or nil for a new channel of one), so that calls of several
// methods may share one channel. Its Args is a *A holding args, its Reply a
// *R; Result reads them typed.
func (m *Method[A, R]) Go(ctx context.Context, c *Client, args A, done chan *Call) *Call {
	p := &typedPair[A, R]{a: args}
	return c.Go(ctx, m.name, &p.a, &p.r, done)
}

// Result returns the reply and error of call, a Call that Go started for
// this method and that has completed (it was received from its Done
// channel). A Call of another method, or of an untyped Go whose Reply is
// not a *R, is an error rather than a wrong value.
func (m *Method[A, R]) Result(call *Call) (R, error) {
	var zero R
	if call == nil {
		return zero, fmt.Errorf("dispatch: %s: Result of a nil Call", m.name)
	}
	r, ok := call.Reply.(*R)
	if !ok || call.ServiceMethod != m.name {
		return zero, fmt.Errorf("dispatch: %s: Result of a Call of %s with a reply of type %T, not this method's *%T",
			m.name, call.ServiceMethod, call.Reply, zero)
	}
	if call.Error != nil {
		return zero, call.Error
	}
	return *r, nil
}
