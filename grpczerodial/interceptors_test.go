package grpczerodial_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
)

// trail records the interceptors that ran, in order.
type trail struct {
	mu  sync.Mutex
	got []string
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	tr.got = append(tr.got, s)
	tr.mu.Unlock()
}

func (tr *trail) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	got := tr.got
	tr.got = nil
	return got
}

// gRPC's own interceptors — unary and stream, server and client — run on
// every path, the server's inside dispatch's chain, in grpc-go's order;
// one that refuses (auth) ends the call with its status before the
// handler.
func TestInterceptors(t *testing.T) {
	tr := &trail{}
	unaryServer := func(name string) grpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			tr.add(name + " " + info.FullMethod)
			if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("authorization")) == 0 {
				return nil, status.Error(codes.Unauthenticated, "no token")
			}
			return handler(ctx, req)
		}
	}
	streamServer := func(name string) grpc.StreamServerInterceptor {
		return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			tr.add(fmt.Sprintf("%s %s client=%v server=%v", name, info.FullMethod, info.IsClientStream, info.IsServerStream))
			return handler(srv, ss)
		}
	}
	unaryClient := func(name string) grpc.UnaryClientInterceptor {
		return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			tr.add(name + " " + method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}
	}
	streamClient := func(name string) grpc.StreamClientInterceptor {
		return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			tr.add(name + " " + method)
			return streamer(ctx, desc, cc, method, opts...)
		}
	}
	dispatchIc := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		tr.add("dispatch " + method)
		return next(ctx, args, reply)
	}
	s := setup{
		srvOpts: []dispatch.ServerOption{dispatch.WithInterceptors(dispatchIc)},
		regOpts: []grpczerodial.ServerOption{
			grpczerodial.WithUnaryInterceptors(unaryServer("s1"), unaryServer("s2")),
			grpczerodial.WithStreamInterceptors(streamServer("ss1"), streamServer("ss2")),
		},
		ccOpts: []grpczerodial.ClientOption{
			grpczerodial.WithUnaryClientInterceptors(unaryClient("c1"), unaryClient("c2")),
			grpczerodial.WithStreamClientInterceptors(streamClient("sc1"), streamClient("sc2")),
		},
	}
	forEachPath(t, s, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		_, err := tc.EmptyCall(context.Background(), &testpb.Empty{})
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
		assert.Equal(t, []string{
			"c1 /grpc.testing.TestService/EmptyCall", "c2 /grpc.testing.TestService/EmptyCall",
			"dispatch grpc.testing.TestService.EmptyCall",
			"s1 /grpc.testing.TestService/EmptyCall",
		}, tr.take())

		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer x")
		_, err = tc.EmptyCall(ctx, &testpb.Empty{})
		require.NoError(t, err)
		assert.Equal(t, []string{
			"c1 /grpc.testing.TestService/EmptyCall", "c2 /grpc.testing.TestService/EmptyCall",
			"dispatch grpc.testing.TestService.EmptyCall",
			"s1 /grpc.testing.TestService/EmptyCall", "s2 /grpc.testing.TestService/EmptyCall",
		}, tr.take())

		s, err := tc.StreamingInputCall(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 3)}}))
		reply, err := s.CloseAndRecv()
		require.NoError(t, err)
		assert.EqualValues(t, 3, reply.GetAggregatedPayloadSize())
		got := tr.take()
		assert.Equal(t, []string{
			"sc1 /grpc.testing.TestService/StreamingInputCall", "sc2 /grpc.testing.TestService/StreamingInputCall",
			"ss1 /grpc.testing.TestService/StreamingInputCall client=true server=false",
			"ss2 /grpc.testing.TestService/StreamingInputCall client=true server=false",
		}, got)
	})
}

type creds struct{}

func (creds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "x"}, nil
}
func (creds) RequireTransportSecurity() bool { return false }

// Call options that would change what is sent are refused, before the call
// is made, with Unimplemented; those with no meaning off grpc-go's
// transport are ignored; OnFinish is called with the call's outcome.
func TestCallOptions(t *testing.T) {
	tr := &trail{}
	dispatchIc := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		tr.add(method)
		return next(ctx, args, reply)
	}
	forEachPath(t, setup{srvOpts: []dispatch.ServerOption{dispatch.WithInterceptors(dispatchIc)}}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		var _ credentials.PerRPCCredentials = creds{}
		for _, o := range []grpc.CallOption{grpc.PerRPCCredentials(creds{}), grpc.CallContentSubtype("json")} {
			_, err := tc.EmptyCall(context.Background(), &testpb.Empty{}, o)
			assert.Equal(t, codes.Unimplemented, status.Code(err), "%T: %v", o, err)
			_, err = tc.StreamingInputCall(context.Background(), o)
			assert.Equal(t, codes.Unimplemented, status.Code(err), "%T: %v", o, err)
		}
		assert.Empty(t, tr.take())

		var finished []error
		_, err := tc.EmptyCall(context.Background(), &testpb.Empty{},
			grpc.WaitForReady(true), grpc.UseCompressor("gzip"), grpc.MaxCallRecvMsgSize(1), grpc.StaticMethod(),
			grpc.OnFinish(func(err error) { finished = append(finished, err) }))
		require.NoError(t, err)
		assert.Equal(t, []error{nil}, finished)
		assert.True(t, slices.Equal([]string{"grpc.testing.TestService.EmptyCall"}, tr.take()))
	})
}
