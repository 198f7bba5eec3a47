package grpczerodial_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/proto"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
)

// borrowing returns a setup's register function for h, whose unary
// methods borrow (Borrows).
func borrowing(h *hooked) func(reg *grpczerodial.Registrar) {
	return func(reg *grpczerodial.Registrar) {
		if err := reg.Register(&testpb.TestService_ServiceDesc, h, grpczerodial.Borrows("UnaryCall")); err != nil {
			panic(err)
		}
	}
}

// A method that borrows gets the caller's request lent on the direct
// shortcut, with nothing encoded: a message of its own whose fields are
// the caller's (the same Payload, the same bytes), and the caller's reply
// gets the handler's reply's fields the same way. On every other path,
// and on the direct shortcut when the caller's context can end, the
// messages are encoded and nothing is shared.
func TestBorrowsLends(t *testing.T) {
	type seen struct {
		req  *testpb.SimpleRequest
		path dispatch.Path
	}
	got := make(chan seen, 1)
	replied := &testpb.Payload{Body: []byte("reply")}
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		info, _ := dispatch.CallInfoFrom(ctx)
		got <- seen{req, info.Path}
		return &testpb.SimpleResponse{Payload: replied, Username: "u"}, nil
	}}
	forEachPath(t, setup{register: borrowing(h)}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		for _, bounded := range []bool{false, true} {
			ctx := context.Background()
			if bounded {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("abc")}, ResponseSize: 7}
			reply, err := tc.UnaryCall(ctx, req)
			require.NoError(t, err)
			s := <-got
			assert.NotSame(t, req, s.req, "the handler's request is a message of its own")
			assert.EqualValues(t, 7, s.req.GetResponseSize())
			assert.Equal(t, "abc", string(s.req.GetPayload().GetBody()))
			assert.Equal(t, "u", reply.GetUsername())
			assert.Equal(t, "reply", string(reply.GetPayload().GetBody()))
			if p.name == "shortcut-direct" && !bounded {
				assert.Equal(t, dispatch.PathShortcutDirect, s.path)
				assert.Same(t, req.GetPayload(), s.req.GetPayload(), "the request's fields are lent")
				assert.Same(t, replied, reply.GetPayload(), "the reply's fields are lent")
				continue
			}
			assert.NotEqual(t, dispatch.PathShortcutDirect, s.path)
			assert.NotSame(t, req.GetPayload(), s.req.GetPayload())
			assert.NotSame(t, &req.GetPayload().GetBody()[0], &s.req.GetPayload().GetBody()[0])
			assert.NotSame(t, replied, reply.GetPayload())
		}
	})
}

// A method registered without Borrows gets a copy of the caller's request
// on the direct shortcut too, and the caller a copy of its reply, though
// nothing is encoded (TestMessagesIsolated holds the same of every path).
func TestDirectCopiesWithoutBorrows(t *testing.T) {
	got := make(chan *testpb.SimpleRequest, 1)
	kept := &testpb.SimpleResponse{Payload: &testpb.Payload{Body: []byte("kept")}}
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		got <- req
		return kept, nil
	}}
	e := start(t, pathNamed(t, "shortcut-direct"), setup{register: registering(h)})
	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("abc")}}
	reply, err := testpb.NewTestServiceClient(e.cc).UnaryCall(context.Background(), req)
	require.NoError(t, err)
	s := <-got
	assert.NotSame(t, req.GetPayload(), s.GetPayload())
	assert.NotSame(t, &req.GetPayload().GetBody()[0], &s.GetPayload().GetBody()[0])
	assert.Equal(t, "abc", string(s.GetPayload().GetBody()))
	assert.NotSame(t, kept.GetPayload(), reply.GetPayload())
	assert.NotSame(t, &kept.GetPayload().GetBody()[0], &reply.GetPayload().GetBody()[0])
	assert.Equal(t, "kept", string(reply.GetPayload().GetBody()))
}

// Borrows names unary methods of the service being registered; another
// name is refused, and nothing of the service is registered.
func TestBorrowsNames(t *testing.T) {
	reg := grpczerodial.NewRegistrar(dispatch.NewServer())
	for _, name := range []string{"NoSuchCall", "StreamingOutputCall"} {
		err := reg.Register(&testpb.TestService_ServiceDesc, &hooked{}, grpczerodial.Borrows(name))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), name)
	}
	assert.Empty(t, reg.GetServiceInfo())
	require.Error(t, reg.Register(&testpb.TestService_ServiceDesc, &hooked{}, nil))
	require.NoError(t, reg.Register(&testpb.TestService_ServiceDesc, &hooked{}, grpczerodial.Borrows()))
}

// A nil request reaches a method that borrows as an empty one, on every
// path (on the direct shortcut, lent: it crashed lend before).
func TestBorrowsNilRequest(t *testing.T) {
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		return &testpb.SimpleResponse{Username: fmt.Sprint(proto.Equal(req, &testpb.SimpleRequest{}))}, nil
	}}
	forEachPath(t, setup{register: borrowing(h)}, func(t *testing.T, p path, e *env) {
		reply, err := testpb.NewTestServiceClient(e.cc).UnaryCall(context.Background(), nil)
		require.NoError(t, err)
		assert.Equal(t, "true", reply.GetUsername())
	})
}

// A direct call of a method that borrows allocates no more than the
// generated code's own messages, the contexts and the call's state: no
// encoding, no buffer (BenchmarkGRPCGenerated's grpczerodial-direct rows).
func TestBorrowsAllocs(t *testing.T) {
	reply := &testpb.SimpleResponse{Username: "u"}
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		return reply, nil
	}}
	e := start(t, pathNamed(t, "shortcut-direct"), setup{register: borrowing(h)})
	tc := testpb.NewTestServiceClient(e.cc)
	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, 64<<10)}}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := tc.UnaryCall(ctx, req); err != nil {
			panic(err)
		}
	})
	t.Logf("%v allocations a call", allocs)
	// The generated client's call options and reply, the handler's
	// request, grpczerodial's bodies, dec func and handler state, the
	// handler context's three values, dispatch's call description and
	// handler context: 12.
	assert.LessOrEqual(t, allocs, 12.0)
}

// A caller that wants no reply (a nil one, as Invoke allows) gets none on
// every path, the direct shortcut's lent reply included.
func TestBorrowsNilReply(t *testing.T) {
	h := &hooked{unary: func(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
		return &testpb.SimpleResponse{Username: "u"}, nil
	}}
	forEachPath(t, setup{register: borrowing(h)}, func(t *testing.T, p path, e *env) {
		require.NoError(t, e.cc.Invoke(context.Background(), "/grpc.testing.TestService/UnaryCall", &testpb.SimpleRequest{}, nil))
	})
}
