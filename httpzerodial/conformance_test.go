package httpzerodial_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/tcp"
)

// The conformance suite (dispatchtest) over HTTP: a Server served by a
// Handler, called by connect-go's own client in each protocol, codec and
// HTTP version below. Each path's differences are declared in the suite
// (dispatchtest/profiles_http.go), as data.

// httpBinding is the suite's binding of p: the Server served by a Handler
// on a loopback HTTP server speaking HTTP/1.1 and h2c, reading at most the
// server's frame limit the case asks for, and connect-go's client reading
// at most the client's.
func httpBinding(prof dispatchtest.Profile, p httpPath) dispatchtest.Binding {
	return dispatchtest.Binding{
		Profile: prof,
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			var opts []httpzerodial.Option
			if l.Server != 0 {
				opts = append(opts, httpzerodial.WithReadMaxBytes(l.Server))
			}
			ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv, opts...))
			ts.Config.Protocols = httpzerodial.Protocols()
			ts.Start()
			t.Cleanup(ts.Close)
			c := newConnectCaller(t, p, ts)
			c.readMax = l.Client
			return c
		},
		// A listener of zerodial's wire, called as if it spoke HTTP.
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			l, err := tcp.New().Listen("127.0.0.1:0")
			require.NoError(t, err)
			require.NoError(t, srv.Start(l))
			t.Cleanup(func() { l.Close() })
			c := &connectCaller{p: p, url: "http://" + l.Addr().String(), hc: conformanceClient(t, p.h2)}
			return c.Call(context.Background(), dispatchtest.Call{Method: "Arith.Multiply", Args: dispatchtest.Args{A: 2, B: 3}, Reply: new(int)})
		},
	}
}

// httpPaths are the HTTP paths the suite runs on.
var httpPaths = []struct {
	prof dispatchtest.Profile
	p    httpPath
}{
	{dispatchtest.ConnectJSONHTTP1, httpPath{proto: nil, h2: false, codec: "json"}},
	{dispatchtest.ConnectMsgpackH2C, httpPath{proto: nil, h2: true, codec: "msgpack"}},
	{dispatchtest.GRPCMsgpackH2C, httpPath{proto: connect.WithGRPC(), h2: true, codec: "msgpack"}},
	{dispatchtest.GRPCWebJSONHTTP1, httpPath{proto: connect.WithGRPCWeb(), h2: false, codec: "json"}},
}

// TestConformance runs the suite on each HTTP path.
func TestConformance(t *testing.T) {
	for _, hp := range httpPaths {
		t.Run(hp.prof.Name, func(t *testing.T) { dispatchtest.Run(t, httpBinding(hp.prof, hp.p)) })
	}
}
