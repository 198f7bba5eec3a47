package bench

import (
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
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
// The other direction, a dispatch Client calling a standard library server
// that has not moved, belongs here too, beside the same twins.

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
