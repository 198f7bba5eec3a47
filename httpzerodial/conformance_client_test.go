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

// clientBinding is the suite's binding of httpzerodial's Client with
// opts: a Server served by a Handler on a loopback HTTP server speaking
// HTTP/1.1 and h2c, called by a dispatch.Client over HTTP
// (dispatchtest.ClientCaller).
func clientBinding(prof dispatchtest.Profile, opts ...httpzerodial.ClientOption) dispatchtest.Binding {
	dial := func(t *testing.T, url string, limits dispatchtest.Limits) *dispatch.Client {
		o := opts
		if limits.Client != 0 {
			o = append(o[:len(o):len(o)], httpzerodial.WithClientConnectOptions(connect.WithReadMaxBytes(limits.Client)))
		}
		c, err := httpzerodial.Dial(context.Background(), url, o...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	return dispatchtest.Binding{
		Profile: prof,
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			var hopts []httpzerodial.Option
			if l.Server != 0 {
				hopts = append(hopts, httpzerodial.WithReadMaxBytes(l.Server))
			}
			ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv, hopts...))
			ts.Config.Protocols = httpzerodial.Protocols()
			ts.Start()
			t.Cleanup(ts.Close)
			return dispatchtest.ClientCaller(dial(t, ts.URL, l))
		},
		// A listener of zerodial's wire, called as if it spoke HTTP.
		OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
			l, err := tcp.New().Listen("127.0.0.1:0")
			require.NoError(t, err)
			require.NoError(t, srv.Start(l))
			t.Cleanup(func() { l.Close() })
			c := dial(t, "http://"+l.Addr().String(), dispatchtest.Limits{})
			return c.Call(context.Background(), "Arith.Multiply", dispatchtest.Args{A: 2, B: 3}, new(int))
		},
	}
}

// TestConformanceClient runs the suite over httpzerodial's Client, in its
// default (Connect, msgpack) and in gRPC with JSON.
func TestConformanceClient(t *testing.T) {
	t.Run(dispatchtest.HTTPClientConnectMsgpack.Name, func(t *testing.T) {
		dispatchtest.Run(t, clientBinding(dispatchtest.HTTPClientConnectMsgpack))
	})
	t.Run(dispatchtest.HTTPClientGRPCMsgpack.Name, func(t *testing.T) {
		dispatchtest.Run(t, clientBinding(dispatchtest.HTTPClientGRPCMsgpack, httpzerodial.WithGRPC()))
	})
}
