package dispatch

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/zerodial/transport/codec"
)

// routes is the router's table, replaced whole by each registration so that
// lookups take no lock.
type routes struct {
	methods  map[string]*method // by "Service.Method"
	services map[string]bool    // service names, for net/rpc's error wording
}

// add publishes methods, all or none.
func (s *Server) add(ms ...*method) error {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if s.closed.IsSet() {
		return fmt.Errorf("dispatch: registering %s: %w", ms[0].name, ErrServerClosed)
	}
	old := s.routes.Load()
	next := &routes{methods: maps.Clone(old.methods), services: maps.Clone(old.services)}
	for _, m := range ms {
		dot := strings.LastIndex(m.name, ".")
		if dot <= 0 || dot == len(m.name)-1 {
			return fmt.Errorf("dispatch: method name %q is not of the form Service.Method", m.name)
		}
		if _, dup := next.methods[m.name]; dup {
			return fmt.Errorf("dispatch: method %s already registered", m.name)
		}
		if m.stream == nil {
			m.handler = chain(s.opts.interceptors, m.name, m.call)
		}
		m.seesCtx = m.takesCtx || len(s.opts.interceptors) > 0
		m.srv = s
		next.methods[m.name] = m
		next.services[m.name[:dot]] = true
	}
	s.routes.Store(next)
	return nil
}

// Methods returns the names of the methods registered, "Service.Method",
// sorted: what the Server answers, for introspection (a debug page, a
// health check listing services).
func (s *Server) Methods() []string {
	return slices.Sorted(maps.Keys(s.routes.Load().methods))
}

// lookup is the router, shared by every path; its errors use net/rpc's
// wording.
func (s *Server) lookup(serviceMethod string) (*method, *Error) {
	r := s.routes.Load()
	if m := r.methods[serviceMethod]; m != nil {
		return m, nil
	}
	dot := strings.LastIndex(serviceMethod, ".")
	if dot < 0 {
		return nil, &Error{Code: CodeInvalidArgument, Message: "rpc: service/method request ill-formed: " + serviceMethod}
	}
	if !r.services[serviceMethod[:dot]] {
		return nil, &Error{Code: CodeNotFound, Message: "rpc: can't find service " + serviceMethod}
	}
	return nil, &Error{Code: CodeNotFound, Message: "rpc: can't find method " + serviceMethod}
}

// chain wraps call in the interceptors. A Server chains each method once,
// at registration, so a call builds no closures; a Client chains each call
// that has interceptors, around the call and its CallInfo.
func chain(ics []Interceptor, name string, call Handler) Handler {
	h := call
	for i := len(ics) - 1; i >= 0; i-- {
		ic, next := ics[i], h
		h = func(ctx context.Context, args, reply any) error {
			return ic(ctx, name, args, reply, next)
		}
	}
	return h
}

// route is lookup for a call that asks for a stream or not.
func (s *Server) route(name string, stream bool) (*method, *Error) {
	m, e := s.lookup(name)
	if e == nil {
		e = shapeError(m, stream)
	}
	if e != nil {
		return nil, e
	}
	return m, nil
}

// shapeError refuses a call that asks for a stream of a unary method, or a
// unary call of a streaming one, in the words every path uses; nil when
// the shapes agree.
func shapeError(m *method, stream bool) *Error {
	switch {
	case stream && m.stream == nil:
		return notStreamingError(m.name)
	case !stream && m.stream != nil:
		return streamingError(m.name)
	}
	return nil
}

// invoke runs one call through the interceptor chain and the panic rule.
// Every path calls it; what it returns is what the caller gets.
func (s *Server) invoke(ctx context.Context, m *method, args, reply any) (e *Error) {
	defer func() {
		if r := recover(); r != nil {
			e = s.panicked(m, r)
		}
	}()
	return toError(m.handler(ctx, args, reply))
}

// panicked logs the panic r of m's handler and returns the caller's error
// for it: the panic rule, the same for calls and streams.
func (s *Server) panicked(m *method, r any) *Error {
	s.opts.logger.Error("dispatch: handler panicked", "method", m.name, "panic", r, "stack", string(debug.Stack()))
	return &Error{Code: CodeInternal, Message: fmt.Sprintf("dispatch: panic in %s: %v", m.name, r)}
}

// goexitError is what a caller gets when the handler of name ended its
// goroutine (runtime.Goexit) instead of returning.
func goexitError(name string) *Error {
	return &Error{Code: CodeInternal, Message: "dispatch: handler of " + name + " ended its goroutine (runtime.Goexit)"}
}

// codecFor returns the codec a request's Content-Type names.
func (s *Server) codecFor(contentType string) (codec.Codec, *Error) {
	if contentType == "" {
		return codec.Msgpack, nil
	}
	if c, ok := s.opts.codecs[contentType]; ok {
		return c, nil
	}
	return nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("dispatch: unsupported content type %q", contentType)}
}

// invokeStream runs a stream's handler under the panic rule. Every path but
// CallStream's fast one calls it.
func (s *Server) invokeStream(ctx context.Context, m *method, end handlerEnd) (e *Error) {
	returned := false
	if ics := s.opts.streamInterceptors; len(ics) > 0 {
		var count *StreamMessages
		ctx, count = withStreamMessages(ctx)
		end = &countedHandlerEnd{end: end, count: count}
		hctx, done, err := beginStream(ctx, ics, m.name)
		if err != nil {
			return toError(err)
		}
		ctx = hctx
		// Deferred first, so that it runs last: after a panic has become e.
		defer func() {
			if !returned {
				done(goexitError(m.name))
				return
			}
			done(errOf(e))
		}()
	}
	defer func() {
		if r := recover(); r != nil {
			e = s.panicked(m, r)
			returned = true
		}
	}()
	e = toError(m.stream.run(ctx, end))
	returned = true
	return e
}
