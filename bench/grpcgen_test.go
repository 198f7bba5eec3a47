package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/test/bufconn"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// A generated gRPC service, with protobuf, on zerodial (grpczerodial) and on
// its peers: the generated client of gRPC's interop TestService
// (google.golang.org/grpc/interop/grpc_testing) calls a minimal
// implementation of it — UnaryCall echoes the payload; StreamingOutputCall
// sends ResponseSize messages of 16 B — through grpczerodial's ClientConn
// over the shortcut (copy, direct), memory, tcp and mux, and through grpc-go
// over TCP and over bufconn, and grpchan's in-process channel (whose default
// Cloner copies protobuf messages with proto.Clone). Unlike the rows of
// grpc_test.go, every row here encodes with protobuf, as a gRPC service does.

// genEcho is the minimal TestService.
type genEcho struct {
	testpb.UnimplementedTestServiceServer
}

func (genEcho) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Payload: req.GetPayload()}, nil
}

var genMsg = &testpb.Payload{Body: make([]byte, 16)}

func (genEcho) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	m := &testpb.StreamingOutputCallResponse{Payload: genMsg}
	for range int(req.GetPayload().GetType()) + int(len(req.GetResponseParameters())) {
		if err := s.Send(m); err != nil {
			return err
		}
	}
	return nil
}

// genConns are the ways a generated client reaches genEcho.
var genConns = []struct {
	name string
	conn func(tb testing.TB) grpc.ClientConnInterface
}{
	{"grpczerodial-copy", func(tb testing.TB) grpc.ClientConnInterface {
		return genZerodial(tb, memory.New(), "", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutCopy)})
	}},
	{"grpczerodial-direct", func(tb testing.TB) grpc.ClientConnInterface {
		return genZerodial(tb, memory.New(), "", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutDirect)}, grpczerodial.Borrows())
	}},
	{"grpczerodial-memory", func(tb testing.TB) grpc.ClientConnInterface { return genZerodial(tb, memory.New(), "", nil) }},
	{"grpczerodial-tcp", func(tb testing.TB) grpc.ClientConnInterface { return genZerodial(tb, tcp.New(), "127.0.0.1:0", nil) }},
	{"grpczerodial-mux", func(tb testing.TB) grpc.ClientConnInterface { return genZerodial(tb, mux.New(), "127.0.0.1:0", nil) }},
	{"grpc-inproc", func(testing.TB) grpc.ClientConnInterface {
		ch := new(inprocgrpc.Channel)
		testpb.RegisterTestServiceServer(ch, genEcho{})
		return ch
	}},
	{"grpc-bufconn", func(tb testing.TB) grpc.ClientConnInterface {
		ln := bufconn.Listen(1 << 20)
		genServeGRPC(tb, ln)
		return genDialGRPC(tb, "passthrough:///bufconn", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return ln.DialContext(ctx)
		}))
	}},
	{"grpc-tcp", func(tb testing.TB) grpc.ClientConnInterface {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		genServeGRPC(tb, ln)
		return genDialGRPC(tb, "passthrough:///"+ln.Addr().String())
	}},
}

// genZerodial serves genEcho on tr, its methods registered with ropts,
// and returns the ClientConn of a Client dialled with copts.
func genZerodial(tb testing.TB, tr transport.Transport, addr string, copts []dispatch.ClientOption, ropts ...grpczerodial.RegisterOption) grpc.ClientConnInterface {
	srv := dispatch.NewServer()
	if err := grpczerodial.NewRegistrar(srv).Register(&testpb.TestService_ServiceDesc, genEcho{}, ropts...); err != nil {
		tb.Fatal(err)
	}
	l, err := tr.Listen(addr)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		tb.Fatal(err)
	}
	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), copts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		srv.Close()
		if cl, ok := tr.(io.Closer); ok {
			cl.Close()
		}
	})
	return grpczerodial.NewClientConn(c)
}

func genServeGRPC(tb testing.TB, l net.Listener) {
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, genEcho{})
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

func genDialGRPC(tb testing.TB, target string, opts ...grpc.DialOption) grpc.ClientConnInterface {
	cc, err := grpc.NewClient(target, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cc.Close() })
	return cc
}

// BenchmarkGRPCGenerated: a generated client's UnaryCall, its payload 16 B,
// 1 KiB and 64 KiB each way, on every row; then a server stream of 10,000
// messages of 16 B, reported per message too. cpu-ns/op is the process's
// CPU time (both ends) a call or stream, steadier than ns/op on a machine
// whose other load takes the cores.
func BenchmarkGRPCGenerated(b *testing.B) {
	for _, n := range []int{16, 1 << 10, 64 << 10} {
		for _, g := range genConns {
			b.Run(fmt.Sprintf("Unary/%s/%dB", g.name, n), func(b *testing.B) {
				tc := testpb.NewTestServiceClient(g.conn(b))
				// Incompressible, as most payloads of this size are: the
				// tcp and mux transports compress large frames (s2), which
				// would otherwise make a row of zeros cheap to send.
				body := make([]byte, n)
				rand.NewChaCha8([32]byte{}).Read(body)
				req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: body}}
				ctx := context.Background()
				b.ReportAllocs()
				cpu := startCPU()
				for b.Loop() {
					if _, err := tc.UnaryCall(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b)
			})
		}
	}
	const msgs = 10000
	for _, g := range genConns {
		b.Run(fmt.Sprintf("Stream/%s/16B", g.name), func(b *testing.B) {
			tc := testpb.NewTestServiceClient(g.conn(b))
			req := &testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Type: testpb.PayloadType(msgs)}}
			ctx := context.Background()
			var m testpb.StreamingOutputCallResponse
			b.ReportAllocs()
			cpu := startCPU()
			for b.Loop() {
				s, err := tc.StreamingOutputCall(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for {
					if err := s.RecvMsg(&m); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
					got++
				}
				if got != msgs {
					b.Fatalf("%d messages, want %d", got, msgs)
				}
			}
			cpu.report(b)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
		})
	}
}
