package grpczerodial

import (
	"context"

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
