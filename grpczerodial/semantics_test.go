package grpczerodial_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zerodial/transport/dispatch"
)

// A handler's status reaches the caller's status.FromError with its code,
// message and details, on every path (Flipt's in-process calls got
// Unknown); a dispatch interceptor sees it as an *Error of the same code.
func TestStatusDetails(t *testing.T) {
	info := &errdetails.ErrorInfo{Reason: "ODD", Domain: "calc.example", Metadata: map[string]string{"n": "3"}}
	h := &hooked{unary: func(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		st, err := status.New(codes.FailedPrecondition, "the sum is odd").WithDetails(info)
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}}
	var mu sync.Mutex
	var seen error
	record := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		err := next(ctx, args, reply)
		mu.Lock()
		seen = err
		mu.Unlock()
		return err
	}
	forEachPath(t, setup{register: registering(h), srvOpts: []dispatch.ServerOption{dispatch.WithInterceptors(record)}}, func(t *testing.T, p path, e *env) {
		_, err := testpb.NewTestServiceClient(e.cc).UnaryCall(context.Background(), &testpb.SimpleRequest{})
		st, ok := status.FromError(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, codes.FailedPrecondition, st.Code())
		assert.Equal(t, "the sum is odd", st.Message())
		require.Len(t, st.Details(), 1)
		assert.True(t, proto.Equal(info, st.Details()[0].(proto.Message)), "%v", st.Details()[0])

		mu.Lock()
		defer mu.Unlock()
		var de *dispatch.Error
		require.True(t, errors.As(seen, &de), "%v", seen)
		assert.Equal(t, dispatch.CodeFailedPrecondition, de.Code)
	})
}

// Headers and trailers a unary handler sets reach the grpc.Header and
// grpc.Trailer call options, several values of a key in order and binary
// values intact, with a reply and with an error, on every path; the
// handler's incoming metadata is the caller's outgoing, which a dispatch
// interceptor reads as dispatch metadata.
func TestUnaryHeaderTrailer(t *testing.T) {
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		in, _ := metadata.FromIncomingContext(ctx)
		if err := grpc.SetHeader(ctx, metadata.Pairs("h", "1", "h", "2")); err != nil {
			return nil, err
		}
		if err := grpc.SendHeader(ctx, metadata.Pairs("echo", in.Get("token")[0])); err != nil {
			return nil, err
		}
		if err := grpc.SetHeader(ctx, metadata.Pairs("late", "x")); err == nil {
			return nil, status.Error(codes.Internal, "SetHeader after SendHeader succeeded")
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs("t-bin", "\x00\x01\xff", "multi", strings3()[0], "multi", strings3()[1])); err != nil {
			return nil, err
		}
		if m, _ := grpc.Method(ctx); m != "/grpc.testing.TestService/UnaryCall" {
			return nil, status.Errorf(codes.Internal, "grpc.Method = %q", m)
		}
		if req.GetFillUsername() {
			return nil, status.Error(codes.Aborted, "as asked")
		}
		return &testpb.SimpleResponse{Username: in.Get("token")[0]}, nil
	}}
	var mu sync.Mutex
	var token string
	record := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		mu.Lock()
		token, _ = dispatch.MetadataValue(ctx, "token")
		mu.Unlock()
		return next(ctx, args, reply)
	}
	forEachPath(t, setup{register: registering(h), srvOpts: []dispatch.ServerOption{dispatch.WithInterceptors(record)}}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "token", "abc")
		for _, fail := range []bool{false, true} {
			var header, trailer metadata.MD
			reply, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{FillUsername: fail}, grpc.Header(&header), grpc.Trailer(&trailer))
			if fail {
				assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, "abc", reply.GetUsername())
			}
			wantHeader := metadata.MD{"h": {"1", "2"}, "echo": {"abc"}}
			wantTrailer := metadata.MD{"t-bin": {"\x00\x01\xff"}, "multi": strings3()[:2]}
			if fail && p.overHTTP() {
				wantHeader, wantTrailer = metadata.Join(wantHeader, wantTrailer), nil
			}
			assert.Equal(t, wantHeader, header)
			assert.Equal(t, wantTrailer, trailer)
			mu.Lock()
			assert.Equal(t, "abc", token)
			mu.Unlock()
		}
	})
}

func strings3() []string { return []string{"a, b", "c"} }

// A stream's header reaches the caller's Header before the stream ends
// (the handler waits until it has), its trailer reaches Trailer once
// RecvMsg has returned io.EOF, and a header the handler sets but never
// sends comes with the end, on every path.
func TestStreamHeaderTrailer(t *testing.T) {
	var release atomic.Pointer[chan struct{}] // one per path
	h := &hooked{output: func(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
		ctx := s.Context()
		s.SetTrailer(metadata.Pairs("t", "1"))
		if req.GetResponseStatus() != nil {
			if err := s.SetHeader(metadata.Pairs("only", "set")); err != nil {
				return err
			}
			return status.Error(codes.OutOfRange, "done early")
		}
		if err := s.SendHeader(metadata.Pairs("h", "early")); err != nil {
			return err
		}
		select {
		case <-*release.Load(): // the caller has read the header
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs("t", "2")); err != nil {
			return err
		}
		return s.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte("m")}})
	}}
	forEachPath(t, setup{register: registering(h)}, func(t *testing.T, p path, e *env) {
		rel := make(chan struct{})
		release.Store(&rel)
		tc := testpb.NewTestServiceClient(e.cc)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		s, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
		require.NoError(t, err)
		header, err := s.Header()
		require.NoError(t, err)
		assert.Equal(t, metadata.MD{"h": {"early"}}, header)
		assert.Nil(t, s.Trailer())
		close(rel)
		m, err := s.Recv()
		require.NoError(t, err)
		assert.Equal(t, "m", string(m.GetPayload().GetBody()))
		_, err = s.Recv()
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, metadata.MD{"t": {"1", "2"}}, s.Trailer())

		s, err = tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseStatus: &testpb.EchoStatus{}})
		require.NoError(t, err)
		header, err = s.Header()
		require.NoError(t, err)
		wantHeader, wantTrailer := metadata.MD{"only": {"set"}}, metadata.MD{"t": {"1"}}
		if p.overHTTP() {
			wantHeader, wantTrailer = metadata.Join(wantHeader, wantTrailer), nil
		}
		assert.Equal(t, wantHeader, header)
		_, err = s.Recv()
		assert.Equal(t, codes.OutOfRange, status.Code(err), "%v", err)
		assert.Equal(t, wantTrailer, s.Trailer())

		// A stream whose handler failed before it sent anything has no
		// header: Header says why.
		hd, err := tc.HalfDuplexCall(ctx)
		require.NoError(t, err)
		_, err = hd.Header()
		assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	})
}

// peer.FromContext gives the caller's address as dispatch's CallInfo has
// it; the handler's context carries the caller's deadline.
func TestPeerAndDeadline(t *testing.T) {
	type seen struct {
		p        *peer.Peer
		info     dispatch.CallInfo
		deadline time.Time
	}
	got := make(chan seen, 1)
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		p, _ := peer.FromContext(ctx)
		info, _ := dispatch.CallInfoFrom(ctx)
		d, _ := ctx.Deadline()
		got <- seen{p, info, d}
		return &testpb.SimpleResponse{}, nil
	}}
	forEachPath(t, setup{register: registering(h)}, func(t *testing.T, p path, e *env) {
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_, err := testpb.NewTestServiceClient(e.cc).UnaryCall(ctx, &testpb.SimpleRequest{})
		require.NoError(t, err)
		s := <-got
		require.NotNil(t, s.p)
		want := p.want()
		if want == dispatch.PathShortcutDirect {
			// A direct call whose context can end runs as copy mode: the
			// caller may return while the handler reads, and a message
			// cannot be lent then (Borrows).
			want = dispatch.PathShortcutCopy
		}
		assert.Equal(t, want, s.info.Path)
		assert.Equal(t, s.info.RemoteAddr, s.p.Addr)
		assert.Equal(t, s.info.LocalAddr, s.p.LocalAddr)
		if p.shortcut != nil {
			assert.Equal(t, dispatch.ShortcutAddr, s.p.Addr)
		}
		require.False(t, s.deadline.IsZero())
		// On the network the deadline travels as the time left, so it
		// may move by the time the request took.
		assert.WithinDuration(t, deadline, s.deadline, time.Minute)
	})
}

// Caller and handler never share a message: the handler gets a request of
// its own and the caller a reply of its own, on every path, the direct
// shortcut too (the hazard that made Consul generate cloning clients).
func TestMessagesIsolated(t *testing.T) {
	got := make(chan *testpb.SimpleRequest, 1)
	kept := &testpb.SimpleResponse{Username: "kept"}
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		got <- req
		return kept, nil
	}}
	forEachPath(t, setup{register: registering(h)}, func(t *testing.T, p path, e *env) {
		req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("abc")}}
		reply, err := testpb.NewTestServiceClient(e.cc).UnaryCall(context.Background(), req)
		require.NoError(t, err)
		handlerReq := <-got
		assert.NotSame(t, req, handlerReq)
		assert.NotSame(t, req.GetPayload(), handlerReq.GetPayload())
		req.Payload.Body[0] = 'X'
		assert.Equal(t, "abc", string(handlerReq.GetPayload().GetBody()))
		assert.NotSame(t, kept, reply)
		reply.Username = "changed"
		assert.Equal(t, "kept", kept.GetUsername())
	})
}

// Shutdown waits for a gRPC call in flight, whose handler sees it begin
// (dispatch.ShuttingDown), and then refuses calls with Unavailable.
func TestShutdown(t *testing.T) {
	entered := make(chan struct{}, 1)
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		entered <- struct{}{}
		select {
		case <-dispatch.ShuttingDown(ctx):
			return &testpb.SimpleResponse{Username: "finished"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	forEachPath(t, setup{register: registering(h)}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		done := make(chan error, 1)
		var reply *testpb.SimpleResponse
		go func() {
			var err error
			reply, err = tc.UnaryCall(context.Background(), &testpb.SimpleRequest{})
			done <- err
		}()
		<-entered
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		require.NoError(t, e.srv.Shutdown(ctx))
		require.NoError(t, <-done)
		assert.Equal(t, "finished", reply.GetUsername())
		_, err := tc.UnaryCall(context.Background(), &testpb.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})
}

// A call whose context ends while its handler runs returns Canceled at
// once, and the handler's request stays its own while the caller goes on
// calling with the ClientConn's reused buffers, on every path.
func TestCancelKeepsRequest(t *testing.T) {
	type seen struct{ body string }
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	got := make(chan seen, 1)
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		if req.GetFillUsername() {
			entered <- struct{}{}
			<-release
			got <- seen{string(req.GetPayload().GetBody())}
		}
		return &testpb.SimpleResponse{Payload: req.GetPayload()}, nil
	}}
	forEachPath(t, setup{register: registering(h)}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{FillUsername: true, Payload: &testpb.Payload{Body: []byte("first")}})
			done <- err
		}()
		<-entered
		cancel()
		assert.Equal(t, codes.Canceled, status.Code(<-done))
		for range 3 {
			reply, err := tc.UnaryCall(context.Background(), &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("later")}})
			require.NoError(t, err)
			assert.Equal(t, "later", string(reply.GetPayload().GetBody()))
		}
		release <- struct{}{}
		assert.Equal(t, seen{"first"}, <-got)
	})
}

// CloseSend never fails, as grpc-go's does not: the stream's end is for
// RecvMsg to say (a generated CloseAndRecv returns CloseSend's error as it
// is, which would otherwise be io.EOF, code Unknown), on every path.
func TestCloseSendAfterEnd(t *testing.T) {
	forEachPath(t, setup{}, func(t *testing.T, p path, e *env) {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := testpb.NewTestServiceClient(e.cc).StreamingInputCall(ctx)
		require.NoError(t, err)
		cancel()
		assert.NoError(t, s.CloseSend()) // whether the end has come or not
		err = s.RecvMsg(new(testpb.StreamingInputCallResponse))
		assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
		assert.NoError(t, s.CloseSend())
		_, err = s.CloseAndRecv()
		assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	})
}

// A server stream whose handler answers and ends at once opens, on every
// path: the generated client takes SendMsg's error for the open's, and
// over HTTP the handler's end could come before the request's write
// returned, which SendMsg said as io.EOF — the open failed (16 to 20 of
// 300 here), and the stream, never read, held a goroutine.
func TestServerStreamEndsBeforeItsRequest(t *testing.T) {
	h := &hooked{output: func(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
		return s.Send(&testpb.StreamingOutputCallResponse{})
	}}
	forEachPath(t, setup{register: registering(h)}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		for range 100 {
			s, err := tc.StreamingOutputCall(context.Background(), &testpb.StreamingOutputCallRequest{})
			require.NoError(t, err)
			n := 0
			for {
				if _, err = s.Recv(); err != nil {
					break
				}
				n++
			}
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, 1, n)
		}
	})
}
