package httpzerodial

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"connectrpc.com/connect"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// OpenStream opens a stream (dispatch.ProtocolConn). Over HTTP/2 it is a
// bidirectional stream of connect-go, which carries every shape, its
// request headers sent at once so that a handler that sends first is not
// kept waiting. Over HTTP/1.1, which cannot carry both directions at once,
// it is a server stream, sent when the caller has sent its one message
// and closed its side (oneWay).
func (c *httpConn) OpenStream(ctx context.Context, name string, md dispatch.Metadata) (dispatch.ProtocolStream, error) {
	cl := c.client(&c.streams, name, c.streamHC)
	if err := requestMetadata(http.Header{}, md); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &httpStream{cancel: cancel, cl: cl, ctx: ctx, md: md, name: name, codec: c.p.o.codec}
	s.stop = context.AfterFunc(c.ctx, cancel)
	if c.streamH1 {
		s.oneWay = true
		return s, nil
	}
	bs := cl.CallBidiStream(ctx)
	_ = requestMetadata(bs.RequestHeader(), md) // checked above
	conn, err := bs.Conn()
	if err != nil {
		s.end()
		return nil, fromConnect(err)
	}
	s.conn = conn
	if err := conn.Send(nil); err != nil && !errors.Is(err, io.EOF) {
		s.Close()
		return nil, fromConnect(err)
	}
	return s, nil
}

// speaksHTTP1 reports whether hc sends a request to a URL of scheme
// ("http", "https") over HTTP/1.1 for sure: its transport is net/http's,
// without HTTP/2 over plain TCP for "http", and with Protocols that leave
// HTTP/2 out for "https" (a transport without Protocols negotiates it).
func speaksHTTP1(hc *http.Client, scheme string) bool {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return false
	}
	if scheme == "https" {
		return tr.Protocols != nil && !tr.Protocols.HTTP2()
	}
	return tr.Protocols == nil || !tr.Protocols.UnencryptedHTTP2()
}

// httpStream is the caller's end of a stream over HTTP
// (dispatch.ProtocolStream).
type httpStream struct {
	cancel context.CancelFunc
	stop   func() bool // the watch of the connection's end
	cl     *connect.Client[outgoing, incoming]
	ctx    context.Context
	md     dispatch.Metadata // the caller's, for a oneWay stream's request
	name   string
	codec  codec.Codec

	// oneWay: the stream goes over HTTP/1.1 as a server stream, its
	// request made by CloseSend, with the message Send encoded (first).
	oneWay bool
	first  []byte
	sent   int

	// mu guards conn, nil until a oneWay stream's request is made. smu
	// and rmu are held by Send and CloseSend, and by Receive: Close closes
	// a side that is not in use, and leaves one in use to its user, whom
	// the cancelled request lets go.
	mu                 sync.Mutex
	conn               connect.StreamingClientConn
	smu, rmu           sync.Mutex
	reqClosed, resDone bool
	in                 incoming
	replyMD            dispatch.Metadata
}

// errOneWay is what a stream over HTTP/1.1 gets when its caller sends a
// second message, or receives before closing its side.
func (s *httpStream) errOneWay() error {
	return &dispatch.Error{Code: dispatch.CodeUnimplemented, Message: "httpzerodial: " + s.name +
		" over HTTP/1.1 carries one message from the caller, sent and closed (CloseSend) before the first Recv, as CallStream does; " +
		"bidi and client streams need HTTP/2 (h2c or TLS)"}
}

func (s *httpStream) Send(m any) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.reqClosed {
		return io.EOF
	}
	if s.oneWay {
		if s.sent > 0 {
			return s.errOneWay()
		}
		b, err := encodeArgs(s.codec, m)
		if err != nil {
			return &dispatch.Error{Code: dispatch.CodeInternal, Message: "httpzerodial: encoding a message of " + s.name + ": " + err.Error()}
		}
		s.first, s.sent = b, 1
		return nil
	}
	err := s.conn.Send(&outgoing{v: m})
	if errors.Is(err, io.EOF) {
		return io.EOF // the server has ended the stream: Receive says why
	}
	if err != nil {
		return fromConnect(err)
	}
	return nil
}

func (s *httpStream) CloseSend() error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.reqClosed {
		return nil
	}
	s.reqClosed = true
	if s.oneWay {
		req := connect.NewRequest(&outgoing{raw: s.first, encoded: true})
		_ = requestMetadata(req.Header(), s.md) // checked by OpenStream
		ss, err := s.cl.CallServerStream(s.ctx, req)
		if err != nil {
			return fromConnect(err)
		}
		conn, err := ss.Conn()
		if err != nil {
			return fromConnect(err)
		}
		s.mu.Lock()
		s.conn = conn
		s.mu.Unlock()
		return nil
	}
	if err := s.conn.CloseRequest(); err != nil && !errors.Is(err, io.EOF) {
		return fromConnect(err)
	}
	return nil
}

func (s *httpStream) Receive() ([]byte, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.resDone {
		return nil, io.EOF
	}
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil { // a oneWay stream whose caller has not closed its side
		s.resDone = true
		s.end()
		return nil, s.errOneWay()
	}
	err := conn.Receive(&s.in)
	if err == nil {
		return s.in.data, nil
	}
	s.resDone = true
	if errors.Is(err, io.EOF) {
		s.replyMD = replyMetadata(conn.ResponseHeader(), conn.ResponseTrailer())
		err = io.EOF
	} else {
		s.replyMD = errorMetadata(err)
		err = fromConnect(err)
	}
	_ = conn.CloseResponse()
	s.end()
	return nil, err
}

// end ends the request, once the response has: nothing more can come.
func (s *httpStream) end() {
	s.stop()
	s.cancel()
}

func (s *httpStream) ReplyMetadata() dispatch.Metadata {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.replyMD
}

func (s *httpStream) Close() {
	s.end()
	if s.rmu.TryLock() {
		s.mu.Lock()
		conn := s.conn
		s.mu.Unlock()
		if !s.resDone && conn != nil {
			s.resDone = true
			_ = conn.CloseResponse()
		}
		s.rmu.Unlock()
	}
	if s.smu.TryLock() {
		if !s.reqClosed && s.conn != nil {
			s.reqClosed = true
			_ = s.conn.CloseRequest()
		}
		s.smu.Unlock()
	}
}
