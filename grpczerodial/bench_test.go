package grpczerodial_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/interop"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/proto"
)

// sizes are the payloads the benchmarks use: a small message, 1 KiB, 64 KiB.
var sizes = []int{16, 1 << 10, 64 << 10}

func request(n int) *testpb.SimpleRequest {
	return &testpb.SimpleRequest{
		ResponseType: testpb.PayloadType_COMPRESSABLE,
		ResponseSize: int32(n),
		Payload:      &testpb.Payload{Body: make([]byte, n)},
		FillUsername: true,
	}
}

// BenchmarkIsolate compares the two ways a copy-mode call could keep caller
// and handler apart: encoding the message and decoding it on the other side
// (what the ClientConn and the Registrar do, on every path), or proto.Clone
// (possible only in process, and only with a handler that takes the
// caller's message type, which a generated handler's dec func hides).
func BenchmarkIsolate(b *testing.B) {
	for _, n := range sizes {
		req := request(n)
		b.Run(fmt.Sprintf("marshal/%dB", n), func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var err error
				buf, err = proto.MarshalOptions{}.MarshalAppend(buf[:0], req)
				if err != nil {
					b.Fatal(err)
				}
				var out testpb.SimpleRequest
				if err := proto.Unmarshal(buf, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("clone/%dB", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = proto.Clone(req).(*testpb.SimpleRequest)
			}
		})
	}
}

// BenchmarkUnary is a generated client's UnaryCall of the interop service
// on every path, its request and reply of each size.
func BenchmarkUnary(b *testing.B) {
	for _, p := range paths {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%dB", p.name, n), func(b *testing.B) {
				e := start(b, p, setup{})
				tc := testpb.NewTestServiceClient(e.cc)
				req := request(n)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := tc.UnaryCall(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	_ = interop.NewTestServer
}
