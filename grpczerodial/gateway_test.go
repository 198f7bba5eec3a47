package grpczerodial_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/memory"
)

// gateway is interop's TestService with a UnaryCall of its own, which
// records the path of each call and what it saw, answers with headers and
// trailers (binary and of several values too), and fails with a status
// with details when asked for one.
type gateway struct {
	testpb.TestServiceServer
	mu    sync.Mutex
	paths []dispatch.Path
	seen  []metadata.MD
}

func (g *gateway) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	info, _ := dispatch.CallInfoFrom(ctx)
	md, _ := metadata.FromIncomingContext(ctx)
	g.mu.Lock()
	g.paths = append(g.paths, info.Path)
	g.seen = append(g.seen, md)
	g.mu.Unlock()
	if err := grpc.SetHeader(ctx, metadata.Pairs("answered-by", "gateway", "raw-bin", "\x00\xff")); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, metadata.Pairs("why", "one", "why", "two")); err != nil {
		return nil, err
	}
	if rs := req.GetResponseStatus(); rs != nil {
		st, err := status.New(codes.Code(rs.GetCode()), rs.GetMessage()).WithDetails(&errdetails.ErrorInfo{Reason: "ASKED", Domain: "gateway.example"})
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}
	return &testpb.SimpleResponse{Username: "user of " + md.Get("x-user")[0]}, nil
}

// One handler, three callers: the generated stub in-process through a
// ClientConn (the shortcut), grpc-go's own client and connect-go's client
// over the network through httpzerodial's Handler — Flipt's gateway
// shape. Each reaches the same registered method with its metadata, gets
// its reply, its headers and trailers, and its status with code, message
// and details.
func TestOneHandlerThreeClients(t *testing.T) {
	srv := dispatch.NewServer()
	g := &gateway{TestServiceServer: interop.NewTestServer()}
	testpb.RegisterTestServiceServer(grpczerodial.NewRegistrar(srv), g)
	ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
	ts.Config.Protocols = httpzerodial.Protocols()
	ts.Start()
	t.Cleanup(ts.Close)

	tr := memory.New()
	l, err := tr.Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	local, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutCopy))
	require.NoError(t, err)
	t.Cleanup(func() {
		local.Close()
		srv.Close()
		tr.Close()
	})
	conn, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(ts.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })

	fail := &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.FailedPrecondition), Message: "not now"}}
	for _, c := range []struct {
		name string
		cc   grpc.ClientConnInterface
	}{{"in-process", grpczerodial.NewClientConn(local)}, {"grpc-go", conn}} {
		t.Run(c.name, func(t *testing.T) {
			tc := testpb.NewTestServiceClient(c.cc)
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user", "ann")
			var header, trailer metadata.MD
			res, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
			require.NoError(t, err)
			assert.Equal(t, "user of ann", res.GetUsername())
			assert.Equal(t, []string{"gateway"}, header.Get("answered-by"))
			assert.Equal(t, []string{"\x00\xff"}, header.Get("raw-bin"))
			assert.Equal(t, []string{"one", "two"}, trailer.Get("why"))

			_, err = tc.UnaryCall(ctx, fail)
			st, ok := status.FromError(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, codes.FailedPrecondition, st.Code())
			assert.Equal(t, "not now", st.Message())
			require.Len(t, st.Details(), 1)
			info, ok := st.Details()[0].(*errdetails.ErrorInfo)
			require.True(t, ok, "%T", st.Details()[0])
			assert.Equal(t, "ASKED", info.GetReason())
		})
	}

	t.Run("connect-go", func(t *testing.T) {
		tr := &http.Transport{Protocols: new(http.Protocols)}
		tr.Protocols.SetUnencryptedHTTP2(true)
		t.Cleanup(tr.CloseIdleConnections)
		for _, opt := range []struct {
			name string
			o    []connect.ClientOption
		}{{"connect", nil}, {"grpc", []connect.ClientOption{connect.WithGRPC()}}, {"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}}} {
			t.Run(opt.name, func(t *testing.T) {
				cl := connect.NewClient[testpb.SimpleRequest, testpb.SimpleResponse](&http.Client{Transport: tr}, ts.URL+"/grpc.testing.TestService/UnaryCall", opt.o...)
				req := connect.NewRequest(&testpb.SimpleRequest{})
				req.Header().Set("X-User", "bob")
				res, err := cl.CallUnary(context.Background(), req)
				require.NoError(t, err)
				assert.Equal(t, "user of bob", res.Msg.GetUsername())
				assert.Equal(t, "gateway", res.Header().Get("Answered-By"))
				assert.Equal(t, []string{"one", "two"}, res.Trailer().Values("Why"))
				raw, err := connect.DecodeBinaryHeader(res.Header().Get("Raw-Bin"))
				require.NoError(t, err)
				assert.Equal(t, []byte("\x00\xff"), raw)

				_, err = cl.CallUnary(context.Background(), connect.NewRequest(fail))
				var ce *connect.Error
				require.True(t, errors.As(err, &ce), "%v", err)
				assert.Equal(t, connect.CodeFailedPrecondition, ce.Code())
				assert.Equal(t, "not now", ce.Message())
				require.Len(t, ce.Details(), 1)
				v, err := ce.Details()[0].Value()
				require.NoError(t, err)
				info, ok := v.(*errdetails.ErrorInfo)
				require.True(t, ok, "%T", v)
				assert.Equal(t, "ASKED", info.GetReason())
			})
		}
	})

	// Every caller reached the one handler, on its path.
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, []dispatch.Path{
		dispatch.PathShortcutCopy, dispatch.PathShortcutCopy,
		dispatch.PathHTTP, dispatch.PathHTTP, dispatch.PathHTTP, dispatch.PathHTTP, dispatch.PathHTTP, dispatch.PathHTTP, dispatch.PathHTTP, dispatch.PathHTTP,
	}, g.paths)
}
