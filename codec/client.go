package codec

import (
	"net/rpc"
	"reflect"
	"sync/atomic"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/rpcwire"
)

// NewClientCodec returns an rpc.ClientCodec that sends each request as one
// Message on sock and reads each response from one, so that
//
//	client := rpc.NewClientWithCodec(codec.NewClientCodec(sock))
//
// calls a server over any transport. The codec owns sock: closing the
// client closes it. Bodies use Default unless WithCodec says otherwise.
func NewClientCodec(sock transport.Socket, opts ...Option) rpc.ClientCodec {
	o := applyOptions(opts)
	return &clientCodec{
		sock:  sock,
		codec: o.codec,
		body:  newBodyWriter(o.codec),
		req:   transport.Message{Header: make(map[string]string, 3)},
		resp:  transport.Message{Header: make(map[string]string, 3)},
	}
}

type clientCodec struct {
	sock   transport.Socket
	codec  Codec
	closed atomic.Bool

	// Write side. net/rpc holds a mutex around WriteRequest, so one
	// Message and one body buffer serve every request.
	body bodyWriter
	req  transport.Message

	// Read side. net/rpc reads from one goroutine and calls
	// ReadResponseBody before the next ReadResponseHeader, so one Message
	// serves every response and bodies are decoded straight from the
	// buffer Recv filled.
	resp transport.Message
}

func (c *clientCodec) WriteRequest(r *rpc.Request, args any) error {
	b, err := c.body.marshal(args)
	if err != nil {
		return err
	}
	c.req.Header[rpcwire.ServiceMethod] = r.ServiceMethod
	c.req.Header[rpcwire.Seq] = rpcwire.FormatSeq(r.Seq)
	c.req.Header[rpcwire.ContentType] = c.codec.Name()
	c.req.Body = b
	err = c.sock.Send(&c.req)
	c.req.Body = nil
	return err
}

func (c *clientCodec) ReadResponseHeader(r *rpc.Response) error {
	if err := c.sock.Recv(&c.resp); err != nil {
		return recvError(err, c.closed.Load())
	}
	seq, err := rpcwire.ParseSeq(c.resp.Header)
	if err != nil {
		return err
	}
	r.ServiceMethod = c.resp.Header[rpcwire.ServiceMethod]
	r.Seq = seq
	r.Error = c.resp.Header[rpcwire.Error]
	return nil
}

func (c *clientCodec) ReadResponseBody(reply any) error {
	defer releaseLarge(&c.resp)
	if reply == nil {
		// net/rpc discards the body of a failed or unknown call.
		return nil
	}
	// The reply is zeroed first, as on every path of this project: an
	// empty body is a zero reply (WIRE.md), and a map of another type is
	// caught (ErrNoFieldsMatched) even in a reply the caller reuses.
	if len(c.resp.Body) == 0 {
		zeroTarget(reply)
		return nil
	}
	if !rawTarget(reply) { // a raw body replaces the target whole, reusing its capacity
		zeroTarget(reply)
	}
	return c.codec.Unmarshal(c.resp.Body, reply)
}

// rawTarget reports whether v is a pass-through target (see Raw).
func rawTarget(v any) bool {
	switch v.(type) {
	case *[]byte, *Raw, RawBody:
		return true
	}
	return false
}

// zeroTarget sets *v to its zero value when v is a non-nil pointer (a nil
// one is left for Unmarshal to report).
func zeroTarget(v any) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
}

func (c *clientCodec) Close() error {
	c.closed.Store(true)
	return c.sock.Close()
}
