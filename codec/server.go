package codec

import (
	"fmt"
	"net/rpc"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/rpcwire"
)

// NewServerCodec returns an rpc.ServerCodec that reads each request from one
// Message on sock and sends each response as one, so that
//
//	go server.ServeCodec(codec.NewServerCodec(sock))
//
// serves a client over any transport. The codec owns sock: ServeCodec closes
// it when it returns. Bodies use Default unless WithCodec says otherwise.
//
// A request whose Content-Type names another codec gets an error response
// wrapping ErrContentType; a request without Content-Type is taken to use
// the server's codec. net/rpc ignores errors from WriteResponse, so when a
// response cannot be sent — its reply cannot be encoded, or Send fails — the
// codec closes sock: the client then sees its calls fail instead of waiting
// for a response that will never come.
func NewServerCodec(sock transport.Socket, opts ...Option) rpc.ServerCodec {
	o := applyOptions(opts)
	return &serverCodec{
		sock:  sock,
		codec: o.codec,
		req:   transport.Message{Header: make(map[string]string, 3)},
		body:  newBodyWriter(o.codec),
		resp:  transport.Message{Header: make(map[string]string, 3)},
	}
}

type serverCodec struct {
	sock   transport.Socket
	codec  Codec
	closed atomic.Bool

	// Read side, used by the one goroutine that runs ServeCodec, which
	// calls ReadRequestBody before the next ReadRequestHeader.
	req         transport.Message
	contentType string // of the request being read, "" when absent

	// Write side. net/rpc serialises WriteResponse itself, but a
	// ServerCodec may be driven by other callers, and the reused Message
	// and buffer must not be shared by two sends.
	mu   sync.Mutex
	body bodyWriter
	resp transport.Message
}

func (s *serverCodec) ReadRequestHeader(r *rpc.Request) error {
	for {
		if err := s.sock.Recv(&s.req); err != nil {
			return recvError(err, s.closed.Load())
		}
		if _, cancel := s.req.Header[rpcwire.Cancel]; !cancel {
			break
		}
		// A caller gave up on a call; net/rpc has no way to stop it, and
		// must not answer the Cancel message as if it were a call.
	}
	seq, err := rpcwire.ParseSeq(s.req.Header)
	if err != nil {
		return err
	}
	r.ServiceMethod = s.req.Header[rpcwire.ServiceMethod]
	r.Seq = seq
	s.contentType = s.req.Header[rpcwire.ContentType]
	return nil
}

func (s *serverCodec) ReadRequestBody(args any) error {
	defer releaseLarge(&s.req)
	if args == nil {
		// net/rpc discards the body of a call it cannot serve.
		return nil
	}
	if s.contentType != "" && s.contentType != s.codec.Name() {
		return fmt.Errorf("%w: request body is %q, this server reads %q",
			ErrContentType, s.contentType, s.codec.Name())
	}
	if len(s.req.Body) == 0 {
		// Nil arguments (WIRE.md): net/rpc's fresh value stays zero.
		zeroTarget(args)
		return nil
	}
	return s.codec.Unmarshal(s.req.Body, args)
}

func (s *serverCodec) WriteResponse(r *rpc.Response, reply any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var body []byte
	if r.Error == "" {
		b, err := s.body.marshal(reply)
		if err != nil {
			s.Close()
			return fmt.Errorf("codec: closing connection: response to %s (seq %d) cannot be sent: %w",
				r.ServiceMethod, r.Seq, err)
		}
		body = b
		delete(s.resp.Header, rpcwire.Error)
	} else {
		s.resp.Header[rpcwire.Error] = r.Error
	}
	s.resp.Header[rpcwire.ServiceMethod] = r.ServiceMethod
	s.resp.Header[rpcwire.Seq] = rpcwire.FormatSeq(r.Seq)
	s.resp.Body = body
	err := s.sock.Send(&s.resp)
	s.resp.Body = nil
	if err != nil {
		s.Close()
		return fmt.Errorf("codec: closing connection: response to %s (seq %d) cannot be sent: %w",
			r.ServiceMethod, r.Seq, err)
	}
	return nil
}

func (s *serverCodec) Close() error {
	s.closed.Store(true)
	return s.sock.Close()
}
