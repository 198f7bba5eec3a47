package bench

import (
	"context"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"
	"testing"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
)

// The migration rows: net/rpc's own clients, unchanged, calling a
// dispatch.Server that serves them through Server.ServeCodec, each beside
// its twin, the same client calling the standard library's rpc.Server over
// the same loopback TCP (netrpc_test.go). Their ratio is what moving a
// server to dispatch costs, or saves, the clients that have not moved yet.
//
//   - zerodial-gobrpc-tcp: rpc.Dial (gob) calling ServeCodec with
//     gobrpc.NewServerCodec; its twin is netrpc-tcp.
//   - zerodial-jsonrpc-tcp: jsonrpc.Dial calling ServeCodec with
//     jsonrpc.NewServerCodec; its twin is jsonrpc-tcp. 16B and 1KiB only,
//     as jsonrpc-tcp: JSON carries a payload as base64 text.
//
// And the other direction, a program moved to dispatch calling a server
// that has not moved, beside the same twins:
//
//   - zerodial-client-gobrpc-tcp: a dispatch Client from DialCodec with
//     gobrpc.NewClientCodec calling the standard library's rpc.Server
//     (ServeConn); its twin is netrpc-tcp.
//   - zerodial-client-jsonrpc-tcp: DialCodec with jsonrpc.NewClientCodec
//     calling rpc.Server with jsonrpc.NewServerCodec; its twin is
//     jsonrpc-tcp.

func init() {
	register("zerodial-gobrpc-tcp", func(tb testing.TB, _ size) func() callFunc {
		addr := serveCodecTCP(tb, func(c net.Conn) rpc.ServerCodec { return gobrpc.NewServerCodec(c) })
		client, err := rpc.Dial("tcp", addr)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { client.Close() })
		return rpcCaller(client)
	})
	register("zerodial-jsonrpc-tcp", func(tb testing.TB, _ size) func() callFunc {
		addr := serveCodecTCP(tb, func(c net.Conn) rpc.ServerCodec { return jsonrpc.NewServerCodec(c) })
		client, err := jsonrpc.Dial("tcp", addr)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { client.Close() })
		return rpcCaller(client)
	}, jsonrpcSizes...)
	register("zerodial-client-gobrpc-tcp", func(tb testing.TB, _ size) func() callFunc {
		addr := serveRPCServerTCP(tb, func(c net.Conn) rpc.ServerCodec { return gobrpc.NewServerCodec(c) })
		return dialCodec(tb, addr, gobrpc.ClientCodecFunc())
	})
	register("zerodial-client-jsonrpc-tcp", func(tb testing.TB, _ size) func() callFunc {
		addr := serveRPCServerTCP(tb, func(c net.Conn) rpc.ServerCodec { return jsonrpc.NewServerCodec(c) })
		return dialCodec(tb, addr, jsonrpc.NewClientCodec)
	}, jsonrpcSizes...)
}

// serveRPCServerTCP serves Arith from the standard library's rpc.Server on
// a loopback listener, each connection with the codec newCodec makes (for
// gob, gobrpc's, which writes the same bytes as rpc.ServeConn's), and
// returns the address. The cleanup closes the listener and waits for the
// connections' ServeCodec, which end when their client hangs up.
func serveRPCServerTCP(tb testing.TB, newCodec func(net.Conn) rpc.ServerCodec) string {
	srv := newRPCServer(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeCodec(newCodec(c)) })
		}
	})
	// Registered before the Client's cleanup, so it runs after it.
	tb.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// dialCodec returns one shared dispatch Client over newCodec's codec
// (safe for concurrent use) as the callers.
func dialCodec(tb testing.TB, addr string, newCodec func(io.ReadWriteCloser) rpc.ClientCodec) func() callFunc {
	c, err := dispatch.DialCodec(context.Background(), nil, "tcp", addr, newCodec)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	call := func(ctx context.Context, m method, args, reply any) error {
		return c.Call(ctx, zerodialMethods[m], args, reply)
	}
	return func() callFunc { return call }
}

// serveCodecTCP serves Arith, registered by reflection as the standard
// library's server registers it, from a dispatch.Server on a loopback
// listener, one ServeCodec per connection with the codec newCodec makes,
// and returns the address. The cleanup closes the listener and the Server
// and waits for every ServeCodec.
func serveCodecTCP(tb testing.TB, newCodec func(net.Conn) rpc.ServerCodec) string {
	srv := dispatch.NewServer()
	if err := srv.Register(new(Arith)); err != nil {
		tb.Fatal(err)
	}
	l := loopbackListener(tb)
	serveCodecOn(tb, l, srv, newCodec)
	return l.Addr().String()
}
