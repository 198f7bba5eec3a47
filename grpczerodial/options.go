package grpczerodial

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
)

// ServerOption configures a Registrar.
type ServerOption func(*serverOptions)

type serverOptions struct {
	unary  []grpc.UnaryServerInterceptor
	stream []grpc.StreamServerInterceptor
}

// WithUnaryInterceptors adds gRPC unary server interceptors (logging,
// auth, recovery written for grpc-go) around every unary method the
// Registrar registers, the first outermost, as grpc.ChainUnaryInterceptor
// orders them. They run inside dispatch's own interceptors
// (dispatch.WithInterceptors), on every path.
func WithUnaryInterceptors(ics ...grpc.UnaryServerInterceptor) ServerOption {
	return func(o *serverOptions) { o.unary = append(o.unary, ics...) }
}

// WithStreamInterceptors adds gRPC stream server interceptors around every
// streaming method the Registrar registers, the first outermost, inside
// dispatch's stream interceptors (dispatch.WithStreamInterceptors).
func WithStreamInterceptors(ics ...grpc.StreamServerInterceptor) ServerOption {
	return func(o *serverOptions) { o.stream = append(o.stream, ics...) }
}

// ClientOption configures a ClientConn.
type ClientOption func(*clientOptions)

type clientOptions struct {
	unary  []grpc.UnaryClientInterceptor
	stream []grpc.StreamClientInterceptor
}

// WithUnaryClientInterceptors adds gRPC unary client interceptors around
// every Invoke, the first outermost (grpc.WithChainUnaryInterceptor's
// order). They run outside the dispatch.Client's own interceptors.
func WithUnaryClientInterceptors(ics ...grpc.UnaryClientInterceptor) ClientOption {
	return func(o *clientOptions) { o.unary = append(o.unary, ics...) }
}

// WithStreamClientInterceptors adds gRPC stream client interceptors around
// every NewStream, the first outermost.
func WithStreamClientInterceptors(ics ...grpc.StreamClientInterceptor) ClientOption {
	return func(o *clientOptions) { o.stream = append(o.stream, ics...) }
}

// chainUnary makes one interceptor of ics (nil for none), as grpc-go
// chains a server's.
func chainUnary(ics []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(ics) {
	case 0:
		return nil
	case 1:
		return ics[0]
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return ics[0](ctx, req, info, chainUnaryFrom(ics, 1, info, handler))
	}
}

func chainUnaryFrom(ics []grpc.UnaryServerInterceptor, i int, info *grpc.UnaryServerInfo, last grpc.UnaryHandler) grpc.UnaryHandler {
	if i == len(ics) {
		return last
	}
	return func(ctx context.Context, req any) (any, error) {
		return ics[i](ctx, req, info, chainUnaryFrom(ics, i+1, info, last))
	}
}

// chainStream makes one interceptor of ics (nil for none).
func chainStream(ics []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	switch len(ics) {
	case 0:
		return nil
	case 1:
		return ics[0]
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return ics[0](srv, ss, info, chainStreamFrom(ics, 1, info, handler))
	}
}

func chainStreamFrom(ics []grpc.StreamServerInterceptor, i int, info *grpc.StreamServerInfo, last grpc.StreamHandler) grpc.StreamHandler {
	if i == len(ics) {
		return last
	}
	return func(srv any, ss grpc.ServerStream) error {
		return ics[i](srv, ss, info, chainStreamFrom(ics, i+1, info, last))
	}
}

// RegisterOption configures Registrar.Register.
type RegisterOption func(*registerOptions)

type registerOptions struct {
	all  bool     // Borrows() with no names
	only []string // the methods Borrows named
}

// Borrows declares that unary methods of the service being registered
// borrow their request and reply rather than keep them, as dispatch.Borrows
// declares it of a dispatch method. The handler promises to read the
// request, and what it holds, only until it returns, and to return a
// reply that it keeps no reference to and does not change later.
//
// In return, a dispatch.ShortcutDirect caller in this process lends the
// handler its request, and the handler lends the caller its reply, with
// nothing encoded: the handler's request message is a new one whose
// fields are the caller's (its sub-messages, lists, maps and bytes are
// the caller's own), and the caller's reply gets the fields of the
// handler's reply the same way. The caller must not change its request
// until the call returns, and what its reply holds is shared with the
// handler's reply, for as long as either keeps it. A call whose context
// can end (it has a Done channel) is not lent: it runs as
// dispatch.ShortcutCopy, since the caller may return while the handler
// still reads. Nothing is encoded, so what encoding refuses (a string
// that is not UTF-8, a proto2 message missing a required field) passes.
//
// Methods registered without Borrows get a deep copy (proto.Merge) of
// the caller's request on the direct shortcut, and the caller one of
// their reply. On every other path Borrows changes nothing: messages are
// encoded.
//
// With no names, every unary method of the service borrows; with names
// (the method's name alone: "UnaryCall"), those do, and each must be a
// unary method of the service.
func Borrows(methods ...string) RegisterOption {
	return func(o *registerOptions) {
		if len(methods) == 0 {
			o.all = true
		}
		o.only = append(o.only, methods...)
	}
}

// registerOpts reads opts, and refuses a Borrows name that is not a unary
// method of desc.
func registerOpts(desc *grpc.ServiceDesc, opts []RegisterOption) (registerOptions, error) {
	var o registerOptions
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("grpczerodial: Register %s: nil RegisterOption", desc.ServiceName)
		}
		opt(&o)
	}
	for _, n := range o.only {
		if !slices.ContainsFunc(desc.Methods, func(m grpc.MethodDesc) bool { return m.MethodName == n }) {
			return o, fmt.Errorf("grpczerodial: Register %s: Borrows names %q, not a unary method of the service", desc.ServiceName, n)
		}
	}
	return o, nil
}

// borrowing reports whether the unary method called name borrows.
func (o registerOptions) borrowing(name string) bool {
	return o.all || slices.Contains(o.only, name)
}
