package bench

import (
	"context"
	"sync"
	"testing"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/tcp"
)

// The conformance suite (dispatchtest) over HashiCorp's msgpackrpc: the
// Server on one port — a tcp listener whose fallback hands the
// connections that open with msgpack to ServeConn, with msgpackrpc's own
// server codec — called by a Client over msgpackrpc's own client codec
// (DialCodec with msgpackrpc.NewClientCodec, the codec of the net/rpc
// client Consul and Nomad use), which gives the suite's cases a context
// and a Client's words; the bare net/rpc client's calls are
// compat_test.go's. What net/rpc cannot carry is declared in the suite
// (dispatchtest.MsgpackRPC).

// msgpackBinding serves the Server on one port, its msgpackrpc
// connections by ServeConn, and dials it with msgpackrpc's client codec.
var msgpackBinding = dispatchtest.Binding{
	Profile: dispatchtest.MsgpackRPC,
	Serve: func(t *testing.T, srv *dispatch.Server, _ dispatchtest.Limits) dispatchtest.Caller {
		addr := serveOnePort(t, srv)
		c, err := dispatch.DialCodec(context.Background(), nil, "tcp", addr, msgpackrpc.NewClientCodec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return dispatchtest.ClientCaller(c)
	},
	// A listener of zerodial's wire alone, which msgpackrpc's client
	// finds out at its first call.
	OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
		l, err := tcp.New().Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(l); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		c, err := dispatch.DialCodec(context.Background(), nil, "tcp", l.Addr().String(), msgpackrpc.NewClientCodec)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Call(context.Background(), "Arith.Multiply", dispatchtest.Args{A: 2, B: 3}, new(int))
	},
}

// serveOnePort serves srv on a tcp listener whose fallback takes the
// connections that open with msgpack, each served by ServeConn with
// msgpackrpc's server codec, until the test ends; it returns the port's
// address.
func serveOnePort(t *testing.T, srv *dispatch.Server) string {
	fb, err := fallback.New()
	if err != nil {
		t.Fatal(err)
	}
	msgpackConns := fb.Split(fallback.Msgpack)
	l, err := tcp.New(tcp.WithFallback(fb)).Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		t.Fatal(err)
	}
	var serving sync.WaitGroup
	serving.Go(func() {
		for {
			c, err := msgpackConns.Accept()
			if err != nil {
				return
			}
			serving.Go(func() { srv.ServeConn(c, msgpackrpc.NewServerCodec) })
		}
	})
	t.Cleanup(func() {
		srv.Close()
		l.Close()
		fb.Close()
		serving.Wait()
	})
	return l.Addr().String()
}

// TestConformance runs the suite on msgpackrpc.
func TestConformance(t *testing.T) { dispatchtest.Run(t, msgpackBinding) }
