package codec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/rpcwire"
	"github.com/zerodial/transport/memory"
)

type Args struct{ A, B int }

type Arith struct{}

func (Arith) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (Arith) MultiplyPtr(args *Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (Arith) Divide(args Args, reply *int) error {
	if args.B == 0 {
		return errors.New("divide by zero")
	}
	*reply = args.A / args.B
	return nil
}

func (Arith) Echo(args []byte, reply *[]byte) error {
	*reply = append((*reply)[:0], args...)
	return nil
}

func (Arith) EchoRaw(args codec.Raw, reply *codec.Raw) error {
	*reply = append((*reply)[:0], args...)
	return nil
}

// Unencodable answers with a reply msgpack cannot encode.
func (Arith) Unencodable(args Args, reply *func()) error {
	*reply = func() {}
	return nil
}

// socketPair returns the two ends of a memory connection.
func socketPair(t *testing.T) (client, server transport.Socket) {
	t.Helper()
	tr := memory.New()
	l, err := tr.Listen("")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan transport.Socket, 1)
	go func() {
		s, err := l.Accept()
		assert.NoError(t, err)
		accepted <- s
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, err = tr.Dial(ctx, l.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// serve runs an rpc.Server with an Arith over one memory connection, its
// server socket wrapped by wrap when not nil, and returns a client. The
// server has stopped when the test ends.
func serve(t *testing.T, wrap func(transport.Socket) transport.Socket, clientOpts, serverOpts []codec.Option) *rpc.Client {
	t.Helper()
	srv := rpc.NewServer()
	require.NoError(t, srv.Register(Arith{}))
	csock, ssock := socketPair(t)
	if wrap != nil {
		ssock = wrap(ssock)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeCodec(codec.NewServerCodec(ssock, serverOpts...))
	}()
	client := rpc.NewClientWithCodec(codec.NewClientCodec(csock, clientOpts...))
	t.Cleanup(func() {
		client.Close()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("ServeCodec did not return after the client closed")
		}
	})
	return client
}

func TestRPCMultiply(t *testing.T) {
	client := serve(t, nil, nil, nil)

	var reply int
	require.NoError(t, client.Call("Arith.Multiply", Args{7, 8}, &reply))
	assert.Equal(t, 56, reply)

	// Pointer arguments encode the same as values, on either side.
	require.NoError(t, client.Call("Arith.Multiply", &Args{6, 9}, &reply))
	assert.Equal(t, 54, reply)
	require.NoError(t, client.Call("Arith.MultiplyPtr", Args{-3, 5}, &reply))
	assert.Equal(t, -15, reply)
	require.NoError(t, client.Call("Arith.MultiplyPtr", &Args{1 << 20, 1 << 20}, &reply))
	assert.Equal(t, 1<<40, reply)
}

func TestRPCErrors(t *testing.T) {
	client := serve(t, nil, nil, nil)

	var reply int
	err := client.Call("Arith.Divide", Args{1, 0}, &reply)
	assert.Equal(t, rpc.ServerError("divide by zero"), err)

	err = client.Call("Arith.Nope", Args{1, 2}, &reply)
	var se rpc.ServerError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "can't find method Arith.Nope")

	err = client.Call("NoService.Method", Args{1, 2}, &reply)
	require.ErrorAs(t, err, &se)

	// Wrong argument types are an error response, not a broken connection.
	err = client.Call("Arith.Multiply", "not args", &reply)
	require.ErrorAs(t, err, &se)

	// The connection is still good.
	require.NoError(t, client.Call("Arith.Divide", Args{9, 3}, &reply))
	assert.Equal(t, 3, reply)
}

func TestRPCConcurrentCalls(t *testing.T) {
	client := serve(t, nil, nil, nil)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var reply int
			if assert.NoError(t, client.Call("Arith.Multiply", Args{i, i + 1}, &reply)) {
				assert.Equal(t, i*(i+1), reply)
			}
		}()
	}
	wg.Wait()

	// And asynchronously, many in flight at once.
	calls := make([]*rpc.Call, n)
	replies := make([]int, n)
	for i := range calls {
		calls[i] = client.Go("Arith.Multiply", Args{i, 3}, &replies[i], nil)
	}
	for i, c := range calls {
		<-c.Done
		require.NoError(t, c.Error)
		assert.Equal(t, 3*i, replies[i])
	}
}

func TestRPCRawBodies(t *testing.T) {
	rec := &recorder{}
	client := serve(t, rec.wrap, nil, nil)

	raw := []byte{0xc1, 0x00, 0xff, 'n', 'o', 't', ' ', 'm', 's', 'g', 'p', 'a', 'c', 'k'}
	var out []byte
	require.NoError(t, client.Call("Arith.Echo", raw, &out))
	assert.Equal(t, raw, out)

	var frame codec.Raw
	require.NoError(t, client.Call("Arith.EchoRaw", codec.Raw(raw), &frame))
	assert.Equal(t, codec.Raw(raw), frame)

	// Empty bodies pass through too.
	require.NoError(t, client.Call("Arith.Echo", []byte{}, &out))
	assert.Empty(t, out)

	// The bodies crossed the wire as they are, in both directions.
	in, sent := rec.messages()
	require.Len(t, in, 3)
	require.Len(t, sent, 3)
	assert.Equal(t, raw, in[0].Body)
	assert.Equal(t, raw, sent[0].Body)
	assert.Equal(t, raw, in[1].Body)
	assert.Equal(t, raw, sent[1].Body)
}

// The wire format: one Message per request and response, with the headers
// the package documents.
func TestRPCWireFormat(t *testing.T) {
	rec := &recorder{}
	client := serve(t, rec.wrap, nil, nil)

	var reply int
	require.NoError(t, client.Call("Arith.Multiply", Args{2, 3}, &reply))
	require.Error(t, client.Call("Arith.Divide", Args{2, 0}, &reply))

	in, sent := rec.messages()
	require.Len(t, in, 2)
	require.Len(t, sent, 2)

	wantArgs, err := codec.Msgpack.Marshal(Args{2, 3})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		rpcwire.ServiceMethod: "Arith.Multiply",
		rpcwire.Seq:           "0",
		rpcwire.ContentType:   "msgpack",
	}, in[0].Header)
	assert.Equal(t, wantArgs, in[0].Body)

	wantReply, err := codec.Msgpack.Marshal(6)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		rpcwire.ServiceMethod: "Arith.Multiply",
		rpcwire.Seq:           "0",
	}, sent[0].Header)
	assert.Equal(t, wantReply, sent[0].Body)

	assert.Equal(t, "1", in[1].Header[rpcwire.Seq])
	assert.Equal(t, map[string]string{
		rpcwire.ServiceMethod: "Arith.Divide",
		rpcwire.Seq:           "1",
		rpcwire.Error:         "divide by zero",
	}, sent[1].Header)
	assert.Empty(t, sent[1].Body, "a failed call's response has no body")
}

// jsonCodec is a Codec without Appender, named differently from Msgpack.
type jsonCodec struct{}

func (jsonCodec) Name() string                       { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func TestRPCWithCodec(t *testing.T) {
	opts := []codec.Option{codec.WithCodec(jsonCodec{}), nil}
	client := serve(t, nil, opts, opts)
	var reply int
	require.NoError(t, client.Call("Arith.Multiply", Args{4, 5}, &reply))
	assert.Equal(t, 20, reply)
	assert.Equal(t, rpc.ServerError("divide by zero"), client.Call("Arith.Divide", Args{4, 0}, &reply))

	// WithCodec(nil) keeps the default.
	client = serve(t, nil, []codec.Option{codec.WithCodec(nil)}, nil)
	require.NoError(t, client.Call("Arith.Multiply", Args{4, 6}, &reply))
	assert.Equal(t, 24, reply)
}

func TestRPCContentTypeMismatch(t *testing.T) {
	client := serve(t, nil, []codec.Option{codec.WithCodec(jsonCodec{})}, nil)
	var reply int
	for range 2 { // the connection survives the first refusal
		err := client.Call("Arith.Multiply", Args{4, 5}, &reply)
		var se rpc.ServerError
		require.ErrorAs(t, err, &se)
		assert.Contains(t, err.Error(), codec.ErrContentType.Error())
		assert.Contains(t, err.Error(), `request body is "json", this server reads "msgpack"`)
	}
}

// net/rpc ignores WriteResponse errors, so a response that cannot be sent
// closes the connection: the caller sees an error instead of waiting.
func TestRPCUnencodableReplyClosesConnection(t *testing.T) {
	client := serve(t, nil, nil, nil)
	var reply func()
	err := client.Call("Arith.Unencodable", Args{}, &reply)
	require.Error(t, err)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	var n int
	assert.ErrorIs(t, client.Call("Arith.Multiply", Args{1, 2}, &n), rpc.ErrShutdown)
}

func TestRPCSendFailureClosesConnection(t *testing.T) {
	wrap := func(s transport.Socket) transport.Socket { return &failingSend{Socket: s} }
	client := serve(t, wrap, nil, nil)
	var reply int
	err := client.Call("Arith.Multiply", Args{1, 2}, &reply)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestServerCodecWriteResponseErrors(t *testing.T) {
	csock, ssock := socketPair(t)
	sc := codec.NewServerCodec(ssock)

	err := sc.WriteResponse(&rpc.Response{ServiceMethod: "S.M", Seq: 3}, make(chan int))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "response to S.M (seq 3) cannot be sent")
	assert.ErrorIs(t, ssock.Send(&transport.Message{}), transport.ErrClosed, "the server socket is closed")
	assert.ErrorIs(t, csock.Recv(&transport.Message{}), io.EOF, "the client sees the end")

	var req rpc.Request
	assert.ErrorIs(t, sc.ReadRequestHeader(&req), io.EOF, "a closed codec reads as a clean end")
}

func TestMalformedSeq(t *testing.T) {
	for _, seq := range []string{"abc", "-1", "", "18446744073709551616", " 1"} {
		csock, ssock := socketPair(t)
		sc := codec.NewServerCodec(ssock)
		cc := codec.NewClientCodec(csock)

		require.NoError(t, csock.Send(&transport.Message{Header: map[string]string{
			rpcwire.ServiceMethod: "Arith.Multiply", rpcwire.Seq: seq,
		}}))
		var req rpc.Request
		err := sc.ReadRequestHeader(&req)
		require.ErrorIs(t, err, codec.ErrMalformedHeader, "%q", seq)
		assert.Contains(t, err.Error(), "Seq")

		require.NoError(t, ssock.Send(&transport.Message{Header: map[string]string{
			rpcwire.ServiceMethod: "Arith.Multiply", rpcwire.Seq: seq,
		}}))
		var resp rpc.Response
		require.ErrorIs(t, cc.ReadResponseHeader(&resp), codec.ErrMalformedHeader, "%q", seq)
	}

	// A missing Seq is malformed too.
	csock, ssock := socketPair(t)
	sc := codec.NewServerCodec(ssock)
	require.NoError(t, csock.Send(&transport.Message{Header: map[string]string{rpcwire.ServiceMethod: "A.B"}}))
	var req rpc.Request
	require.ErrorIs(t, sc.ReadRequestHeader(&req), codec.ErrMalformedHeader)
}

// A response whose Seq cannot be read ends the client: every pending call
// fails rather than waiting for an answer that cannot be matched.
func TestClientMalformedSeqFailsCalls(t *testing.T) {
	csock, ssock := socketPair(t)
	client := rpc.NewClientWithCodec(codec.NewClientCodec(csock))
	defer client.Close()

	call := client.Go("Arith.Multiply", Args{1, 2}, new(int), nil)
	var m transport.Message
	require.NoError(t, ssock.Recv(&m))
	require.NoError(t, ssock.Send(&transport.Message{Header: map[string]string{
		rpcwire.ServiceMethod: "Arith.Multiply", rpcwire.Seq: "x",
	}}))
	<-call.Done
	require.ErrorIs(t, call.Error, codec.ErrMalformedHeader)
}

// Server codecs may be written to from many goroutines.
func TestServerCodecConcurrentWriteResponse(t *testing.T) {
	csock, ssock := socketPair(t)
	sc := codec.NewServerCodec(ssock)
	cc := codec.NewClientCodec(csock)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, sc.WriteResponse(&rpc.Response{ServiceMethod: "S.M", Seq: uint64(i)}, i*2))
		}()
	}
	seen := map[uint64]bool{}
	for range n {
		var resp rpc.Response
		require.NoError(t, cc.ReadResponseHeader(&resp))
		var v int
		require.NoError(t, cc.ReadResponseBody(&v))
		assert.Equal(t, int(resp.Seq)*2, v)
		seen[resp.Seq] = true
	}
	wg.Wait()
	assert.Len(t, seen, n)
}

func TestClientCloseIsShutdown(t *testing.T) {
	client := serve(t, nil, nil, nil)
	require.NoError(t, client.Close())
	var reply int
	assert.ErrorIs(t, client.Call("Arith.Multiply", Args{1, 2}, &reply), rpc.ErrShutdown)
}

// recorder wraps a server socket and keeps a copy of every message that
// passes through it.
type recorder struct {
	mu       sync.Mutex
	in, sent []transport.Message
}

func (r *recorder) wrap(s transport.Socket) transport.Socket { return &recordingSocket{s, r} }

func (r *recorder) messages() (in, sent []transport.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transport.Message(nil), r.in...), append([]transport.Message(nil), r.sent...)
}

func clone(m *transport.Message) transport.Message {
	h := make(map[string]string, len(m.Header))
	for k, v := range m.Header {
		h[k] = v
	}
	return transport.Message{Header: h, Body: append([]byte(nil), m.Body...)}
}

type recordingSocket struct {
	transport.Socket
	r *recorder
}

func (s *recordingSocket) Send(m *transport.Message) error {
	s.r.mu.Lock()
	s.r.sent = append(s.r.sent, clone(m))
	s.r.mu.Unlock()
	return s.Socket.Send(m)
}

func (s *recordingSocket) Recv(m *transport.Message) error {
	err := s.Socket.Recv(m)
	if err == nil {
		s.r.mu.Lock()
		s.r.in = append(s.r.in, clone(m))
		s.r.mu.Unlock()
	}
	return err
}

// failingSend is a socket whose every Send fails, as a broken network would.
type failingSend struct{ transport.Socket }

func (s *failingSend) Send(*transport.Message) error {
	return fmt.Errorf("send: %w", io.ErrClosedPipe)
}

// TestServerCodecSkipsCancel: a Cancel message (WIRE.md) is not a call;
// the server adapter passes over it to the next request.
func TestServerCodecSkipsCancel(t *testing.T) {
	csock, ssock := socketPair(t)
	sc := codec.NewServerCodec(ssock)
	require.NoError(t, csock.Send(&transport.Message{Header: map[string]string{rpcwire.Seq: "3", rpcwire.Cancel: ""}}))
	require.NoError(t, csock.Send(&transport.Message{Header: map[string]string{
		rpcwire.ServiceMethod: "Arith.Multiply", rpcwire.Seq: "4",
	}}))
	var req rpc.Request
	require.NoError(t, sc.ReadRequestHeader(&req))
	assert.Equal(t, uint64(4), req.Seq)
	assert.Equal(t, "Arith.Multiply", req.ServiceMethod)
}
