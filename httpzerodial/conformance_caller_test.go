package httpzerodial_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
	"github.com/zerodial/transport/httpzerodial"
)

// connectCaller is the suite's Caller (dispatchtest.Caller) over
// connect-go's own client: a call is connect-go's CallUnary, a stream its
// CallBidiStream (over HTTP/2) or CallServerStream, of the method's path
// ("/Service/Method"), in the protocol, codec and HTTP version of its
// path. connect-go does the protocol's work, deadlines (Connect-Timeout-Ms,
// grpc-timeout), headers and trailers included; the caller encodes the
// suite's values in the path's codec, as the server decodes them, and
// reads connect-go's answers as the suite words them:
//
//   - a *connect.Error as a *dispatch.Error of its code (DispatchCode), its
//     message and its details, whoever made it: the server, or connect-go
//     for the caller (the end of ctx, a lost connection), in its words;
//   - request metadata as request headers, reply metadata from the
//     response's headers (a unary call's) or trailers (a stream's), less
//     the headers of HTTP and of the protocols, as the Handler reads them.
type connectCaller struct {
	p   httpPath
	url string
	hc  *http.Client
	// readMax is the largest message connect-go's client reads; 0 is its
	// default.
	readMax int
}

// httpPath is one way connect-go's client reaches the Handler.
type httpPath struct {
	proto connect.ClientOption // nil: the Connect protocol
	h2    bool                 // h2c; HTTP/1.1 otherwise
	codec string               // "json" or "msgpack"
}

func newConnectCaller(t testing.TB, p httpPath, ts *httptest.Server) *connectCaller {
	return &connectCaller{p: p, url: ts.URL, hc: conformanceClient(t, p.h2)}
}

// client is connect-go's client of method, whose messages are the bytes
// the caller encodes.
func (c *connectCaller) client(method string) *connect.Client[[]byte, []byte] {
	opts := []connect.ClientOption{connect.WithCodec(bytesCodec{c.p.codec})}
	if c.p.proto != nil {
		opts = append(opts, c.p.proto)
	}
	if c.readMax != 0 {
		opts = append(opts, connect.WithReadMaxBytes(c.readMax))
	}
	return connect.NewClient[[]byte, []byte](c.hc, c.url+urlPath(method), opts...)
}

// urlPath is the path of a method's name: "Arith.Multiply" is
// "/Arith/Multiply", and a name without a dot a path of one segment.
func urlPath(method string) string {
	return "/" + strings.Replace(method, ".", "/", 1)
}

// encode encodes v in the path's codec into bytes of its own: connect-go
// takes what its codec's Marshal returns into its buffer pool once sent,
// and msgpack's Marshal hands a []byte back as it is (AppendMarshal to nil
// copies it), which would lend the caller's memory to connect-go's next
// buffers.
func (c *connectCaller) encode(v any) ([]byte, error) {
	if c.p.codec == "msgpack" {
		return codec.Msgpack.(codec.Appender).AppendMarshal(nil, v)
	}
	return json.Marshal(v)
}

// decode decodes data into v, a pointer, zeroed first: what connect-go's
// client gives is a message of its own, never the caller's old one.
func (c *connectCaller) decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	rv.Elem().SetZero()
	if len(data) == 0 {
		return nil
	}
	if c.p.codec == "msgpack" {
		return codec.Msgpack.Unmarshal(data, v)
	}
	return json.Unmarshal(data, v)
}

func (c *connectCaller) Call(ctx context.Context, call dispatchtest.Call) error {
	if rv := reflect.ValueOf(call.Reply); !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() {
		// connect-go gives its reply as a message of its own: the suite's
		// nil reply has nowhere to go, and is refused before any request,
		// as dispatch's Client refuses it.
		return dispatch.ErrNilReply
	}
	body, err := c.encode(call.Args)
	if err != nil {
		return err
	}
	req := connect.NewRequest(&body)
	setHeaders(req.Header(), call.Metadata)
	res, err := c.client(call.Method).CallUnary(ctx, req)
	if err != nil {
		reflect.ValueOf(call.Reply).Elem().SetZero()
		var ce *connect.Error
		if errors.As(err, &ce) {
			replyMetadata(call.ReplyMetadata, ce.Meta())
		}
		return dispatchErr(err)
	}
	replyMetadata(call.ReplyMetadata, res.Header())
	if err := c.decode(*res.Msg, call.Reply); err != nil {
		return fmt.Errorf("dispatch: decoding reply of %s: %w", call.Method, err)
	}
	return nil
}

func (c *connectCaller) OpenStream(ctx context.Context, s dispatchtest.StreamCall) (dispatchtest.ClientStream, error) {
	st := c.client(s.Method).CallBidiStream(ctx)
	setHeaders(st.RequestHeader(), s.Metadata)
	if !c.p.h2 {
		// connect-go's client carries a bidirectional stream over HTTP/2
		// alone: over HTTP/1.1 it refuses the response. The request sent
		// whole (no message), its refusal is OpenStream's.
		_ = st.CloseRequest()
		_, err := st.Receive()
		_ = st.CloseResponse()
		if err == nil {
			err = errors.New("connect-go carried a bidirectional stream over HTTP/1.1")
		}
		return nil, dispatchErr(err)
	}
	// The request's headers go at once, as dispatch's OpenStream opens
	// the stream: connect-go's sends them with the first message
	// otherwise, and a caller that receives first would wait for ever.
	if err := st.Send(nil); err != nil {
		_ = st.CloseResponse()
		return nil, dispatchErr(err)
	}
	return &connectStream{c: c, st: st, md: s.ReplyMetadata}, nil
}

func (c *connectCaller) CallStream(ctx context.Context, s dispatchtest.StreamCall, args any, each func(m any) bool) error {
	body, err := c.encode(args)
	if err != nil {
		return err
	}
	req := connect.NewRequest(&body)
	setHeaders(req.Header(), s.Metadata)
	st, err := c.client(s.Method).CallServerStream(ctx, req)
	if err != nil {
		return dispatchErr(err)
	}
	defer st.Close()
	m := reflect.New(s.Out).Interface()
	for st.Receive() {
		if err := c.decode(*st.Msg(), m); err != nil {
			return fmt.Errorf("decoding a message of %s: %w", s.Method, err)
		}
		if !each(m) {
			return nil
		}
	}
	if err := st.Err(); err != nil {
		return dispatchErr(err)
	}
	replyMetadata(s.ReplyMetadata, st.ResponseTrailer())
	return nil
}

// connectStream is connect-go's bidirectional stream as the suite's
// ClientStream.
type connectStream struct {
	c  *connectCaller
	st *connect.BidiStreamForClient[[]byte, []byte]
	md *dispatch.Metadata

	mu     sync.Mutex
	closed bool // Close was called: Send and Recv fail with ErrStreamDone
}

func (s *connectStream) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *connectStream) Send(m any) error {
	if s.done() {
		return dispatch.ErrStreamDone
	}
	body, err := s.c.encode(m)
	if err != nil {
		return err
	}
	if err := s.st.Send(&body); err != nil {
		if errors.Is(err, io.EOF) {
			// connect-go's word for a stream the server has ended: the
			// caller learns why from Receive.
			return dispatch.ErrStreamDone
		}
		return dispatchErr(err)
	}
	return nil
}

func (s *connectStream) CloseSend() error {
	if s.done() {
		return dispatch.ErrStreamDone
	}
	return dispatchErr(s.st.CloseRequest())
}

func (s *connectStream) Recv(m any) error {
	if s.done() {
		return dispatch.ErrStreamDone
	}
	b, err := s.st.Receive()
	if err != nil {
		if errors.Is(err, io.EOF) {
			replyMetadata(s.md, s.st.ResponseTrailer())
			return io.EOF
		}
		return dispatchErr(err)
	}
	return s.c.decode(*b, m)
}

func (s *connectStream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	_ = s.st.CloseRequest()
	return s.st.CloseResponse()
}

// dispatchErr is err as the suite words a failure: a *connect.Error as a
// *dispatch.Error of its code, message and details.
func dispatchErr(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	e := &dispatch.Error{Code: httpzerodial.DispatchCode(ce.Code()), Message: ce.Message()}
	for _, d := range ce.Details() {
		e = e.WithDetails(dispatch.ErrorDetail{Type: d.Type(), Value: d.Bytes()})
	}
	return e
}

// setHeaders sets md as request headers; net/http's client refuses a
// name or a value HTTP cannot carry when it sends them.
func setHeaders(h http.Header, md dispatch.Metadata) {
	for k, v := range md {
		h.Set(k, v)
	}
}

// replyMetadata replaces *md with the reply metadata of h, when md is not
// nil and h carries any: the headers that are not HTTP's or the
// protocols', their names in lower case.
func replyMetadata(md *dispatch.Metadata, h http.Header) {
	if md == nil {
		return
	}
	if got := httpzerodial.MetadataOf(h); len(got) > 0 {
		*md = got
	}
}

// bytesCodec is a connect-go codec of a name whose messages are bytes the
// caller has encoded: connect-go carries them as they are.
type bytesCodec struct{ name string }

func (c bytesCodec) Name() string { return c.name }

func (c bytesCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("bytesCodec: cannot marshal %T", v)
	}
	return *b, nil
}

func (c bytesCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("bytesCodec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// conformanceClient is httpClient with HTTP/2 receive windows of 64 KiB
// (net/http's default is 4 MiB a stream): the suite's slow consumer reads
// nothing while the handler sends small messages until HTTP/2's flow
// control stalls it, and under the race detector filling 4 MiB of them
// took minutes; 64 KiB still holds more than dispatch's window would let
// through as messages of a few bytes, the difference the profile declares
// (HTTPFlowControl).
func conformanceClient(t testing.TB, h2 bool) *http.Client {
	hc := httpClient(t, h2)
	hc.Transport.(*http.Transport).HTTP2 = &http.HTTP2Config{
		MaxReceiveBufferPerStream:     64 << 10,
		MaxReceiveBufferPerConnection: 64 << 10,
	}
	return hc
}
