package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// The HTTP rows: a dispatch.Server's methods served over HTTP by
// httpzerodial.Handler, called by connect-go's own generic client, beside
// connect-go serving the same call natively with protobuf, and beside
// grpc-tcp (grpc_test.go). 16B only.
//
//   - zerodial-http-connect: the Connect protocol over HTTP/1.1, loopback,
//     in JSON (encoding/json at both ends, the methods' Go types): what
//     curl or a browser sends. Arith registered by reflection
//     (srv.Register), as zerodial-tcp.
//   - zerodial-http-grpc: the gRPC protocol over h2c (HTTP/2 without TLS,
//     prior knowledge), in msgpack: zerodial's own codec, the one grpc-tcp
//     uses, so that against grpc-tcp only the RPC machinery differs.
//   - connect-native: connect-go's own handler (connect.NewUnaryHandler)
//     and client over the Connect protocol on HTTP/1.1, in protobuf, the
//     same HTTP as zerodial-http-connect. The module has no generated code
//     of its own, so the messages are the well-known
//     wrapperspb.BytesValue, real generated protobuf: the 16-byte request
//     is A and B as little-endian int64s, the reply the 8-byte product,
//     the arithmetic done on the bytes as floor-tcp does.
//   - connect-native-grpc: the same native handler called over the gRPC
//     protocol on h2c, in protobuf: zerodial-http-grpc's twin, the same
//     client, protocol and HTTP/2 without httpzerodial.
//
// Every client turns off gzip, which connect-go's clients accept by
// default and its handlers then use on every reply and message however
// small: grpc-go compresses nothing unless asked, and the rows compare the
// RPC machinery, not gzip.
//
// The stream rows (BenchmarkStream) carry Stream.Flow the same three ways:
// the int64 count in, 16-byte []byte messages out (base64 in JSON; each a
// BytesValue natively, the count an Int64Value).

func init() {
	register("zerodial-http-connect", func(tb testing.TB, _ size) func() callFunc {
		ts := serveHTTPZerodial(tb)
		return connectCaller(connect.NewClient[Args, Product](httpBenchClient(tb, false), ts.URL+"/Arith/Multiply",
			connect.WithCodec(benchJSON{}), noGzip))
	}, size16)
	register("zerodial-http-grpc", func(tb testing.TB, _ size) func() callFunc {
		ts := serveHTTPZerodial(tb)
		return connectCaller(connect.NewClient[Args, Product](httpBenchClient(tb, true), ts.URL+"/Arith/Multiply",
			connect.WithCodec(benchMsgpack{}), connect.WithGRPC(), noGzip))
	}, size16)
	register("connect-native", func(tb testing.TB, _ size) func() callFunc {
		return setupConnectNative(tb, false)
	}, size16)
	register("connect-native-grpc", func(tb testing.TB, _ size) func() callFunc {
		return setupConnectNative(tb, true, connect.WithGRPC())
	}, size16)

	registerStream("zerodial-http-connect", func(tb testing.TB) streamFunc {
		ts := serveHTTPZerodial(tb)
		return connectStream(connect.NewClient[int64, []byte](httpBenchClient(tb, false), ts.URL+"/Stream/Flow",
			connect.WithCodec(benchJSON{}), noGzip))
	})
	registerStream("zerodial-http-grpc", func(tb testing.TB) streamFunc {
		ts := serveHTTPZerodial(tb)
		return connectStream(connect.NewClient[int64, []byte](httpBenchClient(tb, true), ts.URL+"/Stream/Flow",
			connect.WithCodec(benchMsgpack{}), connect.WithGRPC(), noGzip))
	})
	registerStream("connect-native", func(tb testing.TB) streamFunc {
		return setupConnectNativeStream(tb, false)
	})
	registerStream("connect-native-grpc", func(tb testing.TB) streamFunc {
		return setupConnectNativeStream(tb, true, connect.WithGRPC())
	})
}

// noGzip removes gzip from what a connect-go client accepts, so that the
// handler sends every reply and message uncompressed.
var noGzip = connect.WithAcceptCompression("gzip", nil, nil)

// serveHTTPZerodial serves a dispatch.Server with Arith (by reflection) and
// Stream.Flow through an httpzerodial.Handler on a loopback HTTP server
// speaking HTTP/1.1 and h2c; a cleanup closes both.
func serveHTTPZerodial(tb testing.TB) *httptest.Server {
	srv := dispatch.NewServer()
	if err := errors.Join(registerReflect(srv), registerFlow(srv)); err != nil {
		tb.Fatal(err)
	}
	return serveHTTP(tb, httpzerodial.NewHandler(srv), func() { srv.Close() })
}

// serveHTTP serves h on a loopback HTTP server speaking HTTP/1.1 and h2c;
// a cleanup closes it, then calls after.
func serveHTTP(tb testing.TB, h http.Handler, after func()) *httptest.Server {
	ts := httptest.NewUnstartedServer(h)
	ts.Config.Protocols = httpzerodial.Protocols()
	ts.Start()
	tb.Cleanup(func() {
		ts.Close()
		after()
	})
	return ts
}

// httpBenchClient returns an HTTP client speaking HTTP/1.1, or h2c with
// prior knowledge; a cleanup closes its idle connections (registered after
// the server's, so it runs first).
func httpBenchClient(tb testing.TB, h2 bool) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: parallelCallers}
	if h2 {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = p
	}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// benchJSON is a connect-go codec for Go types in JSON: the client's of
// zerodial-http-connect.
type benchJSON struct{}

func (benchJSON) Name() string                    { return "json" }
func (benchJSON) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (benchJSON) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// benchMsgpack is a connect-go codec for Go types in zerodial's msgpack:
// the client's of zerodial-http-grpc. Unmarshal decodes a copy: connect-go
// reuses the bytes it is given once it returns, and the msgpack codec
// hands a []byte message through as the bytes themselves.
type benchMsgpack struct{}

func (benchMsgpack) Name() string                  { return "msgpack" }
func (benchMsgpack) Marshal(v any) ([]byte, error) { return codec.Msgpack.Marshal(v) }
func (benchMsgpack) Unmarshal(b []byte, v any) error {
	return codec.Msgpack.Unmarshal(bytes.Clone(b), v)
}

// connectCaller adapts one connect-go client of Arith.Multiply (safe for
// concurrent use); these rows run at 16B only.
func connectCaller(c *connect.Client[Args, Product]) func() callFunc {
	call := func(ctx context.Context, m method, args, reply any) error {
		if m != multiply {
			return fmt.Errorf("bench: the HTTP rows make 16B calls only")
		}
		res, err := c.CallUnary(ctx, connect.NewRequest(args.(*Args)))
		if err != nil {
			return err
		}
		*reply.(*Product) = *res.Msg
		return nil
	}
	return func() callFunc { return call }
}

// connectStream calls Stream.Flow on c as a server stream and receives it
// with Receive until it ends, checking every message.
func connectStream(c *connect.Client[int64, []byte]) streamFunc {
	return func(ctx context.Context, n int) (int, error) {
		st, err := c.CallServerStream(ctx, connect.NewRequest(new(int64(n))))
		if err != nil {
			return 0, err
		}
		defer st.Close()
		got := 0
		for st.Receive() {
			if m := *st.Msg(); !msgOK(m, got) {
				return got, errBadMsg(got, m)
			}
			got++
		}
		if err := st.Err(); err != nil && !errors.Is(err, io.EOF) {
			return got, err
		}
		return got, nil
	}
}

// setupConnectNative serves Arith.Multiply with connect-go's own handler
// of protobuf messages and calls it with connect-go's client in protobuf
// (connect-go's default codec), with the client options given, over h2c
// or HTTP/1.1.
func setupConnectNative(tb testing.TB, h2 bool, opts ...connect.ClientOption) func() callFunc {
	mux := http.NewServeMux()
	mux.Handle("/Arith/Multiply", connect.NewUnaryHandler("/Arith/Multiply",
		func(_ context.Context, req *connect.Request[wrapperspb.BytesValue]) (*connect.Response[wrapperspb.BytesValue], error) {
			in := req.Msg.GetValue()
			if len(in) != 16 {
				return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("bench: Multiply takes 16 bytes, not %d", len(in)))
			}
			var args Args
			args.A = int64(binary.LittleEndian.Uint64(in[0:8]))
			args.B = int64(binary.LittleEndian.Uint64(in[8:16]))
			var reply Product
			if err := new(Arith).Multiply(&args, &reply); err != nil {
				return nil, err
			}
			return connect.NewResponse(&wrapperspb.BytesValue{Value: binary.LittleEndian.AppendUint64(nil, uint64(reply.P))}), nil
		}))
	ts := serveHTTP(tb, mux, func() {})
	c := connect.NewClient[wrapperspb.BytesValue, wrapperspb.BytesValue](httpBenchClient(tb, h2), ts.URL+"/Arith/Multiply",
		append(opts, noGzip)...)
	call := func(ctx context.Context, m method, args, reply any) error {
		if m != multiply {
			return fmt.Errorf("bench: the HTTP rows make 16B calls only")
		}
		a := args.(*Args)
		in := make([]byte, 16)
		binary.LittleEndian.PutUint64(in[0:8], uint64(a.A))
		binary.LittleEndian.PutUint64(in[8:16], uint64(a.B))
		res, err := c.CallUnary(ctx, connect.NewRequest(&wrapperspb.BytesValue{Value: in}))
		if err != nil {
			return err
		}
		out := res.Msg.GetValue()
		if len(out) != 8 {
			return fmt.Errorf("bench: Multiply answered %d bytes, not 8", len(out))
		}
		reply.(*Product).P = int64(binary.LittleEndian.Uint64(out))
		return nil
	}
	return func() callFunc { return call }
}

// setupConnectNativeStream serves Stream.Flow with connect-go's own server
// stream handler of protobuf messages (an Int64Value in, BytesValues out,
// a new one for each message as a generated server makes them) and
// receives it with connect-go's client, with the client options given, over
// h2c or HTTP/1.1.
func setupConnectNativeStream(tb testing.TB, h2 bool, opts ...connect.ClientOption) streamFunc {
	mux := http.NewServeMux()
	mux.Handle("/Stream/Flow", connect.NewServerStreamHandler("/Stream/Flow",
		func(_ context.Context, req *connect.Request[wrapperspb.Int64Value], st *connect.ServerStream[wrapperspb.BytesValue]) error {
			for i := range int(req.Msg.GetValue()) {
				m := &wrapperspb.BytesValue{Value: make([]byte, msgSize)}
				fillMsg(m.Value, i)
				if err := st.Send(m); err != nil {
					return err
				}
			}
			return nil
		}))
	ts := serveHTTP(tb, mux, func() {})
	c := connect.NewClient[wrapperspb.Int64Value, wrapperspb.BytesValue](httpBenchClient(tb, h2), ts.URL+"/Stream/Flow",
		append(opts, noGzip)...)
	return func(ctx context.Context, n int) (int, error) {
		st, err := c.CallServerStream(ctx, connect.NewRequest(wrapperspb.Int64(int64(n))))
		if err != nil {
			return 0, err
		}
		defer st.Close()
		got := 0
		for st.Receive() {
			if m := st.Msg().GetValue(); !msgOK(m, got) {
				return got, errBadMsg(got, m)
			}
			got++
		}
		if err := st.Err(); err != nil && !errors.Is(err, io.EOF) {
			return got, err
		}
		return got, nil
	}
}
