package bench

import (
	"context"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"reflect"
	"sync"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"
)

// The standard library's net/rpc (gob) over three connections, its
// JSON-RPC 1.0 codec (net/rpc/jsonrpc) over loopback TCP, and hashicorp's
// msgpackrpc codec for net/rpc over a yamux stream: the stack Consul and
// Nomad run their RPC on.

func init() {
	register("netrpc-pipe", setupNetRPCPipe)
	register("netrpc-tcp", setupNetRPCTCP)
	register("jsonrpc-tcp", setupJSONRPCTCP, jsonrpcSizes...)
	register("netrpc-yamux", setupNetRPCYamux)
	register("msgpackrpc-yamux", setupMsgpackRPCYamux)
}

var netrpcMethods = [...]string{multiply: "Arith.Multiply", echo: "Arith.Echo"}

// rpcCaller adapts one shared *rpc.Client (safe for concurrent use). net/rpc
// takes no context.
func rpcCaller(c *rpc.Client) func() callFunc {
	call := func(_ context.Context, m method, args, reply any) error {
		return c.Call(netrpcMethods[m], args, reply)
	}
	return func() callFunc { return call }
}

func newRPCServer(tb testing.TB) *rpc.Server {
	srv := rpc.NewServer()
	if err := srv.Register(new(Arith)); err != nil {
		tb.Fatal(err)
	}
	return srv
}

// setupNetRPCPipe: net/rpc, gob, over net.Pipe (synchronous, in memory).
func setupNetRPCPipe(tb testing.TB, _ size) func() callFunc {
	srv := newRPCServer(tb)
	sc, cc := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeConn(sc)
	}()
	client := rpc.NewClient(cc)
	tb.Cleanup(func() {
		client.Close()
		<-done
	})
	return rpcCaller(client)
}

// setupNetRPCTCP: net/rpc, gob, over one loopback TCP connection.
func setupNetRPCTCP(tb testing.TB, _ size) func() callFunc {
	srv := newRPCServer(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		srv.ServeConn(c)
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		tb.Fatal(err)
	}
	client := rpc.NewClient(cc)
	tb.Cleanup(func() {
		client.Close()
		ln.Close()
		<-done
	})
	return rpcCaller(client)
}

// jsonrpcSizes are the sizes of the JSON-RPC rows: JSON carries a payload as
// base64 text, and the rows are there for the 16B call and a small
// payload, not for bulk data.
var jsonrpcSizes = []size{size16, {"1KiB", 1 << 10}}

// setupJSONRPCTCP: net/rpc with net/rpc/jsonrpc's codec at both ends
// (jsonrpc.Dial, rpc.Server.ServeCodec with jsonrpc.NewServerCodec) over
// one loopback TCP connection.
func setupJSONRPCTCP(tb testing.TB, _ size) func() callFunc {
	srv := newRPCServer(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		srv.ServeCodec(jsonrpc.NewServerCodec(c))
	}()
	client, err := jsonrpc.Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		<-done
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		client.Close()
		ln.Close()
		<-done
	})
	return rpcCaller(client)
}

// setupNetRPCYamux: net/rpc, gob, over one yamux stream of a session over
// loopback TCP.
func setupNetRPCYamux(tb testing.TB, _ size) func() callFunc {
	srv := newRPCServer(tb)
	cs := yamuxStreams(tb, func(ss net.Conn) { srv.ServeConn(ss) })
	client := rpc.NewClient(cs)
	tb.Cleanup(func() { client.Close() })
	return rpcCaller(client)
}

// consulMsgpackHandle is set up as Consul's structs.MsgpackHandle is.
func consulMsgpackHandle() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{WriteExt: true}
	h.MapType = reflect.TypeOf(map[string]any{})
	return h
}

// setupMsgpackRPCYamux: net/rpc with msgpackrpc's codec (buffered reads and
// writes, as Consul and Nomad use it) over one yamux stream of a session
// over loopback TCP.
func setupMsgpackRPCYamux(tb testing.TB, _ size) func() callFunc {
	srv := newRPCServer(tb)
	h := consulMsgpackHandle()
	cs := yamuxStreams(tb, func(ss net.Conn) {
		srv.ServeCodec(msgpackrpc.NewCodecFromHandle(true, true, ss, h))
	})
	// The client is not closed: MsgpackCodec.Close writes a flag its reader
	// goroutine reads without synchronisation (a data race in v2.0.0).
	// Closing the sessions, yamuxStreams' cleanup, ends that goroutine
	// instead.
	return rpcCaller(rpc.NewClientWithCodec(msgpackrpc.NewCodecFromHandle(true, true, cs, h)))
}

// yamuxStreams connects a yamux client session to a server session over
// loopback TCP, opens one stream, runs serve on the server's end of it and
// returns the client's end. Both sessions use yamux's default configuration
// with logging discarded (each its own copy). The cleanup closes both
// sessions, which ends the stream, and waits for serve to return.
func yamuxStreams(tb testing.TB, serve func(net.Conn)) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		srvSess *yamux.Session
		srvErr  error
	)
	accepted := make(chan struct{})
	wg.Go(func() {
		defer close(accepted)
		c, err := ln.Accept()
		if err != nil {
			srvErr = err
			return
		}
		srvSess, srvErr = yamux.Server(c, yamuxConfig())
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		wg.Wait()
		tb.Fatal(err)
	}
	cliSess, err := yamux.Client(c, yamuxConfig())
	if err != nil {
		c.Close()
		ln.Close()
		wg.Wait()
		tb.Fatal(err)
	}
	<-accepted
	ln.Close()
	if srvErr != nil {
		cliSess.Close()
		tb.Fatal(srvErr)
	}
	tb.Cleanup(func() {
		cliSess.Close()
		srvSess.Close()
		wg.Wait()
	})
	cs, err := cliSess.OpenStream()
	if err != nil {
		tb.Fatal(err)
	}
	ss, err := srvSess.AcceptStream()
	if err != nil {
		tb.Fatal(err)
	}
	wg.Go(func() { serve(ss) })
	return cs
}

func yamuxConfig() *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	return cfg
}
