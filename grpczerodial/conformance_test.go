package grpczerodial_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// The conformance suite (dispatchtest) through a ClientConn: the suite's
// services, of Go types in msgpack, called through grpc.ClientConnInterface
// with grpc.ForceCodec of a msgpack codec, as code written against gRPC's
// API would call them, over a dispatch.Client on tcp. Its differences are
// declared in the suite (dispatchtest/profiles_grpc.go), as data.

// grpcCaller is the suite's Caller over a ClientConn: a call is Invoke, a
// stream NewStream, of the method's gRPC name ("/Service/Method"), with
// the msgpack codec forced. It reads gRPC's answers as the suite words
// them:
//
//   - a status as a *dispatch.Error of the code of the same name, its
//     message and its details;
//   - request metadata as outgoing metadata, reply metadata from the
//     header and the trailer (grpc.Header, grpc.Trailer), each key's first
//     value.
type grpcCaller struct{ cc *grpczerodial.ClientConn }

var forceMsgpack = grpc.ForceCodec(msgpackCodec{})

// grpcName is the gRPC name of a dispatch method's: "Arith.Multiply" is
// "/Arith/Multiply" (split at the last dot, as dispatch splits it).
func grpcName(method string) string {
	if i := strings.LastIndex(method, "."); i >= 0 {
		return "/" + method[:i] + "/" + method[i+1:]
	}
	return "/" + method
}

func outgoingMD(ctx context.Context, md dispatch.Metadata) context.Context {
	if len(md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, metadata.New(md))
}

// replyMD sets *to to the header's and trailer's entries, when to is not
// nil: grpc.Header and grpc.Trailer are set by every call made.
func replyMD(to *dispatch.Metadata, mds ...metadata.MD) {
	if to == nil {
		return
	}
	out := dispatch.Metadata{}
	for _, md := range mds {
		for k, vs := range md {
			if len(vs) == 0 {
				continue
			}
			out[k] = vs[0]
		}
	}
	*to = out
}

// dispatchCode is the dispatch code of c: the one of the same name, in
// dispatch's spelling ("FailedPrecondition" is "failed_precondition"),
// and dispatch.CodeUnknown for codes.Unknown.
func dispatchCode(c codes.Code) dispatch.Code {
	if c == codes.Unknown {
		return dispatch.CodeUnknown
	}
	var b strings.Builder
	for i, r := range c.String() {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return dispatch.Code(b.String())
}

// suiteErr is err as the suite words a failure: the error of dispatch's
// that the status wraps (errors.Unwrap), under the status's code when it
// is a *dispatch.Error; a status that wraps none as a *dispatch.Error of
// its code, message and details.
func suiteErr(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if inner := errors.Unwrap(err); inner != nil {
		if de, ok := inner.(*dispatch.Error); ok {
			e := *de
			e.Code = dispatchCode(st.Code())
			return &e
		}
		return inner
	}
	e := &dispatch.Error{Code: dispatchCode(st.Code()), Message: st.Message()}
	for _, d := range st.Proto().GetDetails() {
		e = e.WithDetails(dispatch.ErrorDetail{Type: d.GetTypeUrl(), Value: d.GetValue()})
	}
	return e
}

func (c grpcCaller) Call(ctx context.Context, call dispatchtest.Call) error {
	var header, trailer metadata.MD
	err := c.cc.Invoke(outgoingMD(ctx, call.Metadata), grpcName(call.Method), call.Args, call.Reply,
		forceMsgpack, grpc.Header(&header), grpc.Trailer(&trailer))
	replyMD(call.ReplyMetadata, header, trailer)
	if err != nil {
		if rv := reflect.ValueOf(call.Reply); rv.Kind() == reflect.Pointer && !rv.IsNil() {
			// A generated client returns no reply with an error: the
			// reply the call failed to fill is nothing, as on dispatch's
			// Client, which zeroes it.
			rv.Elem().SetZero()
		}
	}
	return suiteErr(err)
}

var bidi = &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

func (c grpcCaller) OpenStream(ctx context.Context, s dispatchtest.StreamCall) (dispatchtest.ClientStream, error) {
	ctx, cancel := context.WithCancel(outgoingMD(ctx, s.Metadata))
	st, err := c.cc.NewStream(ctx, bidi, grpcName(s.Method), forceMsgpack)
	if err != nil {
		cancel()
		return nil, suiteErr(err)
	}
	return &grpcStream{st: st, cancel: cancel, md: s.ReplyMetadata}, nil
}

func (c grpcCaller) CallStream(ctx context.Context, s dispatchtest.StreamCall, args any, each func(m any) bool) error {
	ctx, cancel := context.WithCancel(outgoingMD(ctx, s.Metadata))
	defer cancel()
	st, err := c.cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, grpcName(s.Method), forceMsgpack)
	if err != nil {
		return suiteErr(err)
	}
	if err := st.SendMsg(args); err != nil && !errors.Is(err, io.EOF) {
		return suiteErr(err)
	}
	_ = st.CloseSend()
	for {
		m := reflect.New(s.Out).Interface()
		if err := st.RecvMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				h, _ := st.Header()
				replyMD(s.ReplyMetadata, h, st.Trailer())
				return nil
			}
			return suiteErr(err)
		}
		if !each(m) {
			return nil
		}
	}
}

// grpcStream is a ClientConn's stream as the suite's ClientStream.
type grpcStream struct {
	st     grpc.ClientStream
	cancel context.CancelFunc
	md     *dispatch.Metadata

	mu     sync.Mutex
	closed bool // Close was called: Send and Recv fail with ErrStreamDone
}

func (s *grpcStream) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *grpcStream) Send(m any) error {
	if s.done() {
		return dispatch.ErrStreamDone
	}
	if err := s.st.SendMsg(m); err != nil {
		if errors.Is(err, io.EOF) {
			// grpc's word for a stream that has ended: Recv says why.
			return dispatch.ErrStreamDone
		}
		return suiteErr(err)
	}
	return nil
}

func (s *grpcStream) CloseSend() error {
	if s.done() {
		return dispatch.ErrStreamDone
	}
	return s.st.CloseSend()
}

func (s *grpcStream) Recv(m any) error {
	if s.done() {
		return dispatch.ErrStreamDone
	}
	if err := s.st.RecvMsg(m); err != nil {
		if errors.Is(err, io.EOF) {
			h, _ := s.st.Header()
			replyMD(s.md, h, s.st.Trailer())
		}
		return suiteErr(err)
	}
	return nil
}

func (s *grpcStream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	return nil
}

// grpcBinding is the suite's binding of a ClientConn over a
// dispatch.Client on tcp, each end reading at most the frame limit the
// case asks for.
var grpcBinding = dispatchtest.Binding{
	Profile: dispatchtest.GRPCClientConnTCP,
	Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
		ln, err := tcp.New(tcpLimit(l.Server)...).Listen("127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, srv.Start(ln))
		c, err := dispatch.Dial(context.Background(), tcp.New(tcpLimit(l.Client)...), ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return grpcCaller{grpczerodial.NewClientConn(c)}
	},
	// A listener of mux, dialled by the Client over tcp.
	OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
		m := mux.New()
		t.Cleanup(func() { m.Close() })
		ln, err := m.Listen("127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, srv.Start(ln))
		c, err := dispatch.Dial(context.Background(), tcp.New(), ln.Addr().String())
		if c != nil {
			c.Close()
		}
		return err
	},
}

func tcpLimit(n int) []tcp.Option {
	if n == 0 {
		return nil
	}
	return []tcp.Option{tcp.WithMaxFrameSize(n)}
}

// TestConformance runs the suite through a ClientConn.
func TestConformance(t *testing.T) {
	dispatchtest.Run(t, grpcBinding)
}
