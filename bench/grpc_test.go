package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/test/bufconn"

	"github.com/zerodial/transport/codec"
)

// gRPC without protoc. The service is registered by hand with a
// grpc.ServiceDesc whose handlers are written exactly as
// protoc-gen-go-grpc writes them, and messages are plain Go structs
// marshalled by a codec registered with grpc/encoding under the name
// "msgpack" and chosen per call with grpc.CallContentSubtype. The codec is
// zerodial's own msgpack codec (github.com/zerodial/transport/codec), so
// gRPC and zerodial pay for the same encoding and the comparison is of the
// RPC machinery alone. This is not what gRPC costs with protobuf: protobuf's
// generated code encodes these messages faster than msgpack's reflection
// does, so gRPC with protobuf would be somewhat faster than grpc-* here on
// the encoding side, and its wire bytes would differ.

func init() {
	encoding.RegisterCodec(codec.Msgpack)
	register("grpc-tcp", setupGRPCTCP)
	register("grpc-bufconn", setupGRPCBufconn)
	register("grpc-inproc", setupGRPCInproc)
	registerStream("grpc-tcp", func(tb testing.TB) streamFunc { return grpcStream(grpcTCPConn(tb, nil, nil)) })
	registerStream("grpc-bufconn", func(tb testing.TB) streamFunc { return grpcStream(grpcBufconnConn(tb)) })
	registerStream("grpc-inproc", func(testing.TB) streamFunc { return grpcStream(grpcInprocConn()) })
}

// grpcCodecName is the content subtype the client asks for; the server
// looks the codec up by it.
const grpcCodecName = "msgpack"

// arithServer is the server interface protoc-gen-go-grpc would generate.
type arithServer interface {
	Multiply(context.Context, *Args) (*Product, error)
	Echo(context.Context, *Payload) (*Payload, error)
}

// grpcArith serves Arith in gRPC's shape.
type grpcArith struct{ arith *Arith }

func (s grpcArith) Multiply(_ context.Context, in *Args) (*Product, error) {
	out := new(Product)
	if err := s.arith.Multiply(in, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (s grpcArith) Echo(_ context.Context, in *Payload) (*Payload, error) {
	out := new(Payload)
	if err := s.arith.Echo(in, out); err != nil {
		return nil, err
	}
	return out, nil
}

var arithServiceDesc = grpc.ServiceDesc{
	ServiceName: "Arith",
	HandlerType: (*arithServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Multiply", Handler: arithMultiplyHandler},
		{MethodName: "Echo", Handler: arithEchoHandler},
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "bench/grpc_test.go",
}

func arithMultiplyHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(Args)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(arithServer).Multiply(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/Arith/Multiply"}
	handler := func(ctx context.Context, req any) (any, error) {
		return srv.(arithServer).Multiply(ctx, req.(*Args))
	}
	return interceptor(ctx, in, info, handler)
}

func arithEchoHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(Payload)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(arithServer).Echo(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/Arith/Echo"}
	handler := func(ctx context.Context, req any) (any, error) {
		return srv.(arithServer).Echo(ctx, req.(*Payload))
	}
	return interceptor(ctx, in, info, handler)
}

var grpcMethods = [...]string{multiply: "/Arith/Multiply", echo: "/Arith/Echo"}

// grpcCaller adapts one shared grpc.ClientConnInterface (safe for
// concurrent use).
func grpcCaller(cc grpc.ClientConnInterface) func() callFunc {
	call := func(ctx context.Context, m method, args, reply any) error {
		return cc.Invoke(ctx, grpcMethods[m], args, reply)
	}
	return func() callFunc { return call }
}

// serveGRPC serves Arith and Stream on l until the cleanup stops the
// server.
func serveGRPC(tb testing.TB, l net.Listener, opts ...grpc.ServerOption) {
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&arithServiceDesc, grpcArith{new(Arith)})
	srv.RegisterService(&streamServiceDesc, grpcFlow{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	tb.Cleanup(func() {
		srv.Stop()
		<-done
	})
}

// dialGRPC returns one ClientConn, closed by a cleanup, that asks for the
// msgpack codec on every call.
func dialGRPC(tb testing.TB, target string, opts ...grpc.DialOption) grpc.ClientConnInterface {
	opts = append(opts,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(grpcCodecName)),
	)
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cc.Close() })
	return cc
}

// setupGRPCTCP: grpc-go over loopback TCP (HTTP/2, one connection).
func setupGRPCTCP(tb testing.TB, _ size) func() callFunc {
	return grpcTCP(tb, nil, nil)
}

// grpcTCP serves Arith over loopback TCP with the server options and dials
// it with the dial options.
func grpcTCP(tb testing.TB, server []grpc.ServerOption, dial []grpc.DialOption) func() callFunc {
	return grpcCaller(grpcTCPConn(tb, server, dial))
}

// grpcTCPConn serves Arith and Stream over loopback TCP and returns a
// ClientConn to them.
func grpcTCPConn(tb testing.TB, server []grpc.ServerOption, dial []grpc.DialOption) grpc.ClientConnInterface {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	serveGRPC(tb, ln, server...)
	return dialGRPC(tb, "passthrough:///"+ln.Addr().String(), dial...)
}

// setupGRPCBufconn: grpc-go over grpc's in-memory bufconn listener: the
// whole HTTP/2 stack, no kernel.
func setupGRPCBufconn(tb testing.TB, _ size) func() callFunc {
	return grpcCaller(grpcBufconnConn(tb))
}

// grpcBufconnConn serves Arith and Stream on a bufconn listener and returns
// a ClientConn to them.
func grpcBufconnConn(tb testing.TB) grpc.ClientConnInterface {
	ln := bufconn.Listen(1 << 20)
	serveGRPC(tb, ln)
	return dialGRPC(tb, "passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return ln.DialContext(ctx)
		}))
}

// setupGRPCInproc: grpchan's in-process channel, which hands requests to the
// service's handlers with no HTTP/2 and no bytes on a connection, but runs
// each call's handler on a goroutine of its own and copies the request and
// the reply with a Cloner. Its default Cloner deep-copies protobuf messages
// without marshalling; these are not protobuf messages, so the Cloner here
// runs the same msgpack codec once each way, as zerodial-copy does.
func setupGRPCInproc(testing.TB, size) func() callFunc {
	return grpcCaller(grpcInprocConn())
}

// grpcInprocConn returns an in-process channel serving Arith and Stream,
// copying messages with the msgpack codec.
func grpcInprocConn() grpc.ClientConnInterface {
	ch := new(inprocgrpc.Channel).WithCloner(inprocgrpc.CodecCloner(codec.Msgpack))
	ch.RegisterService(&arithServiceDesc, grpcArith{new(Arith)})
	ch.RegisterService(&streamServiceDesc, grpcFlow{})
	return ch
}

// Stream.Flow in gRPC's shape: a server-streaming method, described and
// dispatched as protoc-gen-go-grpc would (a grpc.StreamDesc with
// ServerStreams, a handler that receives the request and hands the method a
// grpc.GenericServerStream), with the request an int64 and each message a
// []byte, through the same msgpack codec (which passes a []byte through as
// the body, unencoded, on every row). The method sends a new message each
// time, as gRPC requires: a message must not change after SendMsg, which
// may still be writing it out after it returns (with this codec's []byte,
// whose body is the message's own bytes, it is).

// flowServer is the server interface protoc-gen-go-grpc would generate.
type flowServer interface {
	Flow(*int64, grpc.ServerStreamingServer[[]byte]) error
}

// grpcFlow serves Stream in gRPC's shape.
type grpcFlow struct{}

func (grpcFlow) Flow(n *int64, s grpc.ServerStreamingServer[[]byte]) error {
	for i := range int(*n) {
		m := new(grpcMsg)
		m.b = m.a[:]
		fillMsg(m.b, i)
		if err := s.Send(&m.b); err != nil {
			return err
		}
	}
	return nil
}

// grpcMsg is one message of grpcFlow: its bytes, and the slice of them that
// Send is given, in one allocation, as a generated message is one.
type grpcMsg struct {
	b []byte
	a [msgSize]byte
}

var streamServiceDesc = grpc.ServiceDesc{
	ServiceName: "Stream",
	HandlerType: (*flowServer)(nil),
	Methods:     []grpc.MethodDesc{},
	Streams: []grpc.StreamDesc{
		{StreamName: "Flow", Handler: streamFlowHandler, ServerStreams: true},
	},
	Metadata: "bench/grpc_test.go",
}

func streamFlowHandler(srv any, stream grpc.ServerStream) error {
	m := new(int64)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(flowServer).Flow(m, &grpc.GenericServerStream[int64, []byte]{ServerStream: stream})
}

// grpcStream calls Stream.Flow on cc as a generated client does (NewStream,
// SendMsg of the request, CloseSend), then receives with RecvMsg until
// io.EOF, every message into the same []byte, which the codec decodes into
// in place (a generated client's Recv allocates a new message each time).
func grpcStream(cc grpc.ClientConnInterface) streamFunc {
	return func(ctx context.Context, n int) (int, error) {
		cs, err := cc.NewStream(ctx, &streamServiceDesc.Streams[0], "/Stream/Flow")
		if err != nil {
			return 0, err
		}
		s := &grpc.GenericClientStream[int64, []byte]{ClientStream: cs}
		args := int64(n)
		if err := s.SendMsg(&args); err != nil {
			return 0, err
		}
		if err := s.CloseSend(); err != nil {
			return 0, err
		}
		var msg []byte
		got := 0
		for {
			if err := s.RecvMsg(&msg); err != nil {
				if errors.Is(err, io.EOF) {
					return got, nil
				}
				return got, err
			}
			if !msgOK(msg, got) {
				return got, errBadMsg(got, msg)
			}
			got++
		}
	}
}
