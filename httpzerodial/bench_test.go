package httpzerodial_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// What serving through a dispatch.Server costs over connect-go serving the
// same method natively, with the same codec, client and HTTP: the rows
// named zerodial-* go through the Handler (the pass-through codec, the
// method's types decoded here, Server.Invoke and its worker), the rows
// named connect-* through connect-go's own handler of the same Go types.
// bench/ has this path's rows beside its peers (connect-go serving with
// protobuf, gRPC over TCP): bench/http_test.go.
//
//	go test -run '^$' -bench . -benchmem

// serveNative serves Calc.Add and Calc.Count with connect-go's own handlers
// of Go types, in codec cdc.
func serveNative(b *testing.B, cdc connect.Codec) *httptest.Server {
	mux := http.NewServeMux()
	opt := connect.WithCodec(cdc)
	mux.Handle("/Calc/Add", connect.NewUnaryHandler("/Calc/Add", func(_ context.Context, req *connect.Request[Pair]) (*connect.Response[int], error) {
		return connect.NewResponse(new(req.Msg.A + req.Msg.B)), nil
	}, opt))
	mux.Handle("/Calc/Count", connect.NewServerStreamHandler("/Calc/Count", func(_ context.Context, req *connect.Request[Pair], st *connect.ServerStream[int]) error {
		for i := 1; i <= req.Msg.A; i++ {
			if err := st.Send(&i); err != nil {
				return err
			}
		}
		return nil
	}, opt))
	ts := httptest.NewUnstartedServer(mux)
	ts.Config.Protocols = httpzerodial.Protocols()
	ts.Start()
	b.Cleanup(ts.Close)
	return ts
}

// benchRows are the rows: each protocol and codec through the Handler and
// natively.
var benchRows = []struct {
	name   string
	p      protocol
	codec  connect.Codec
	native bool
}{
	{"zerodial-connect-json-http1", protocols[0], jsonCodec{}, false},
	{"connect-json-http1", protocols[0], jsonCodec{}, true},
	{"zerodial-grpc-msgpack-h2c", protocols[2], msgpackCodec{}, false},
	{"connect-grpc-msgpack-h2c", protocols[2], msgpackCodec{}, true},
}

func benchServer(b *testing.B, native bool, cdc connect.Codec) *httptest.Server {
	if native {
		return serveNative(b, cdc)
	}
	srv := dispatch.NewServer()
	newCalc(b, srv)
	return serve(b, srv)
}

// BenchmarkUnary makes one 16-byte call (Calc.Add) at a time.
func BenchmarkUnary(b *testing.B) {
	for _, row := range benchRows {
		b.Run(row.name, func(b *testing.B) {
			ts := benchServer(b, row.native, row.codec)
			add := client[Pair, int](b, ts, row.p, "/Calc/Add", connect.WithCodec(row.codec))
			ctx := context.Background()
			b.ReportAllocs()
			defer startCPU(b)()
			for b.Loop() {
				res, err := add.CallUnary(ctx, connect.NewRequest(&Pair{A: 2, B: 3}))
				if err != nil {
					b.Fatal(err)
				}
				if *res.Msg != 5 {
					b.Fatalf("2+3 = %d", *res.Msg)
				}
			}
		})
	}
}

// BenchmarkStream receives a server stream of 10,000 messages per op
// (Calc.Count).
func BenchmarkStream(b *testing.B) {
	const n = 10000
	for _, row := range benchRows {
		b.Run(row.name, func(b *testing.B) {
			ts := benchServer(b, row.native, row.codec)
			cl := client[Pair, int](b, ts, row.p, "/Calc/Count", connect.WithCodec(row.codec))
			ctx := context.Background()
			b.ReportAllocs()
			defer startCPU(b)()
			for b.Loop() {
				st, err := cl.CallServerStream(ctx, connect.NewRequest(&Pair{A: n}))
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for st.Receive() {
					got++
					if *st.Msg() != got {
						b.Fatalf("message %d is %d", got, *st.Msg())
					}
				}
				if err := st.Err(); err != nil && !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				st.Close()
				if got != n {
					b.Fatalf("%d messages, want %d", got, n)
				}
			}
		})
	}
}

// What calling through httpzerodial's Client (Dial: a dispatch.Client over
// HTTP) costs over calling with connect-go's own client, on the same
// handler, protocol, codec and HTTP: the Connect protocol in msgpack, a
// unary call over HTTP/1.1 and a server stream over h2c, as Dial's Client
// sends them by default. The rows named */dial are this Client (a typed
// call, Method.Call; CallStream), the rows named */connect connect-go's
// generic client of the same Go types; handler is the Handler serving a
// dispatch.Server (zerodial) or connect-go's own handler (native).
//
//	go test -run '^$' -bench 'Client' -benchmem

// BenchmarkClientUnary makes one 16-byte call (Calc.Add) at a time.
func BenchmarkClientUnary(b *testing.B) {
	for _, native := range []bool{false, true} {
		handler := "zerodial"
		if native {
			handler = "native"
		}
		b.Run(handler+"/connect", func(b *testing.B) {
			ts := benchServer(b, native, msgpackCodec{})
			add := client[Pair, int](b, ts, protocols[0], "/Calc/Add", connect.WithCodec(msgpackCodec{}))
			ctx := context.Background()
			b.ReportAllocs()
			defer startCPU(b)()
			for b.Loop() {
				res, err := add.CallUnary(ctx, connect.NewRequest(&Pair{A: 2, B: 3}))
				if err != nil {
					b.Fatal(err)
				}
				if *res.Msg != 5 {
					b.Fatalf("2+3 = %d", *res.Msg)
				}
			}
		})
		b.Run(handler+"/dial", func(b *testing.B) {
			ts := benchServer(b, native, msgpackCodec{})
			c := dialHTTP(b, ts.URL)
			ctx := context.Background()
			b.ReportAllocs()
			defer startCPU(b)()
			for b.Loop() {
				sum, err := add.Call(ctx, c, Pair{A: 2, B: 3})
				if err != nil {
					b.Fatal(err)
				}
				if sum != 5 {
					b.Fatalf("2+3 = %d", sum)
				}
			}
		})
	}
}

// BenchmarkClientStream receives a server stream of 10,000 messages per op
// (Calc.Count).
func BenchmarkClientStream(b *testing.B) {
	const n = 10000
	for _, native := range []bool{false, true} {
		handler := "zerodial"
		if native {
			handler = "native"
		}
		b.Run(handler+"/connect", func(b *testing.B) {
			ts := benchServer(b, native, msgpackCodec{})
			cl := client[Pair, int](b, ts, protocols[1], "/Calc/Count", connect.WithCodec(msgpackCodec{}))
			ctx := context.Background()
			b.ReportAllocs()
			defer startCPU(b)()
			for b.Loop() {
				st, err := cl.CallServerStream(ctx, connect.NewRequest(&Pair{A: n}))
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for st.Receive() {
					got++
					if *st.Msg() != got {
						b.Fatalf("message %d is %d", got, *st.Msg())
					}
				}
				if err := st.Err(); err != nil && !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				st.Close()
				if got != n {
					b.Fatalf("%d messages, want %d", got, n)
				}
			}
		})
		b.Run(handler+"/dial", func(b *testing.B) {
			ts := benchServer(b, native, msgpackCodec{})
			c := dialHTTP(b, ts.URL)
			ctx := context.Background()
			b.ReportAllocs()
			defer startCPU(b)()
			for b.Loop() {
				got := 0
				for m, err := range dispatch.CallStream[Pair, int](ctx, c, "Calc.Count", &Pair{A: n}) {
					if err != nil {
						b.Fatal(err)
					}
					got++
					if *m != got {
						b.Fatalf("message %d is %d", got, *m)
					}
				}
				if got != n {
					b.Fatalf("%d messages, want %d", got, n)
				}
			}
		})
	}
}
