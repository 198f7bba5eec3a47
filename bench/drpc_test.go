package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmux"
	"storj.io/drpc/drpcserver"

	"github.com/zerodial/transport/codec"
)

// drpc (storj.io/drpc) without protoc, as gRPC is here: Stream.Flow is
// described by hand with a drpc.Description, whose receiver is written as
// protoc-gen-go-drpc writes one, and its messages go through the same
// msgpack codec as every other row, as a drpc.Encoding. drpc serves one
// stream at a time per connection; the stream row needs no more. Only the
// stream row is here: drpc has no unary row.
//
// drpc's defaults are kept: its MsgSend flushes the connection after every
// message (drpcstream.Options.ManualFlush is off), so each message is a
// write to the socket.

func init() {
	registerStream("drpc-tcp", setupDRPCStream)
}

// drpcEncoding is the msgpack codec as a drpc.Encoding, with MarshalAppend,
// which drpc uses to encode into a buffer it reuses, as its protobuf
// encoding does.
type drpcEncoding struct{}

func (drpcEncoding) Marshal(msg drpc.Message) ([]byte, error) { return codec.Msgpack.Marshal(msg) }

func (drpcEncoding) MarshalAppend(buf []byte, msg drpc.Message) ([]byte, error) {
	return codec.Msgpack.(codec.Appender).AppendMarshal(buf, msg)
}

func (drpcEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	return codec.Msgpack.Unmarshal(buf, msg)
}

// drpcFlowServer is the server interface protoc-gen-go-drpc would generate.
type drpcFlowServer interface {
	Flow(*int64, drpc.Stream) error
}

// drpcFlow serves Stream.Flow in drpc's shape, filling one buffer for every
// message: MsgSend encodes it before it returns.
type drpcFlow struct{}

func (drpcFlow) Flow(n *int64, s drpc.Stream) error {
	msg := make([]byte, msgSize)
	for i := range int(*n) {
		fillMsg(msg, i)
		if err := s.MsgSend(&msg, drpcEncoding{}); err != nil {
			return err
		}
	}
	return nil
}

// drpcStreamDesc describes Stream.Flow to a drpcmux.Mux. The method
// expression tells the mux the method's shape: one message in, a stream out.
type drpcStreamDesc struct{}

func (drpcStreamDesc) NumMethods() int { return 1 }

func (drpcStreamDesc) Method(n int) (string, drpc.Encoding, drpc.Receiver, any, bool) {
	if n != 0 {
		return "", nil, nil, nil, false
	}
	return "/Stream/Flow", drpcEncoding{},
		func(srv any, _ context.Context, in1, in2 any) (drpc.Message, error) {
			return nil, srv.(drpcFlowServer).Flow(in1.(*int64), in2.(drpc.Stream))
		}, drpcFlowServer.Flow, true
}

// setupDRPCStream: a drpc server on loopback TCP, one client connection.
func setupDRPCStream(tb testing.TB) streamFunc {
	mux := drpcmux.New()
	if err := mux.Register(drpcFlow{}, drpcStreamDesc{}); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = drpcserver.New(mux).Serve(ctx, ln)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	conn := drpcconn.New(nc)
	tb.Cleanup(func() { conn.Close() })
	return func(ctx context.Context, n int) (int, error) {
		// As a generated client opens a server stream: NewStream, the
		// request, CloseSend; then MsgRecv until io.EOF.
		s, err := conn.NewStream(ctx, "/Stream/Flow", drpcEncoding{})
		if err != nil {
			return 0, err
		}
		defer s.Close()
		args := int64(n)
		if err := s.MsgSend(&args, drpcEncoding{}); err != nil {
			return 0, err
		}
		if err := s.CloseSend(); err != nil {
			return 0, err
		}
		var msg []byte
		got := 0
		for {
			if err := s.MsgRecv(&msg, drpcEncoding{}); err != nil {
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
