package httpzerodial

import (
	"context"
	"errors"
	"io"
	"sync"

	"connectrpc.com/connect"

	"github.com/zerodial/transport/dispatch"
)

// OpenStream opens a stream (dispatch.ProtocolConn): a bidirectional
// stream of connect-go, which carries every shape, its request headers
// sent at once so that a handler that sends first is not kept waiting.
func (c *httpConn) OpenStream(ctx context.Context, name string, md dispatch.Metadata) (dispatch.ProtocolStream, error) {
	cl := c.client(&c.streams, name, c.streamHC)
	ctx, cancel := context.WithCancel(ctx)
	s := &httpStream{cancel: cancel}
	s.stop = context.AfterFunc(c.ctx, cancel)
	bs := cl.CallBidiStream(ctx)
	setMetadata(bs.RequestHeader(), md)
	conn, err := bs.Conn()
	if err != nil {
		s.stop()
		cancel()
		return nil, fromConnect(err)
	}
	s.conn = conn
	if err := conn.Send(nil); err != nil && !errors.Is(err, io.EOF) {
		s.Close()
		return nil, fromConnect(err)
	}
	return s, nil
}

// httpStream is the caller's end of a stream over HTTP
// (dispatch.ProtocolStream).
type httpStream struct {
	conn   connect.StreamingClientConn
	cancel context.CancelFunc
	stop   func() bool // the watch of the connection's end

	// smu and rmu are held by Send and CloseSend, and by Receive: Close
	// closes a side that is not in use, and leaves one in use to its
	// user, whom the cancelled request lets go.
	smu, rmu           sync.Mutex
	reqClosed, resDone bool
	in                 incoming
	md                 dispatch.Metadata
}

func (s *httpStream) Send(m any) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.reqClosed {
		return io.EOF
	}
	err := s.conn.Send(&outgoing{m})
	if err != nil && !errors.Is(err, io.EOF) {
		return fromConnect(err)
	}
	return err
}

func (s *httpStream) CloseSend() error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.reqClosed {
		return nil
	}
	s.reqClosed = true
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
	err := s.conn.Receive(&s.in)
	if err == nil {
		return s.in.data, nil
	}
	s.resDone = true
	if errors.Is(err, io.EOF) {
		s.md = replyMetadata(s.conn.ResponseHeader(), s.conn.ResponseTrailer())
		err = io.EOF
	} else {
		s.md = errorMetadata(err)
		err = fromConnect(err)
	}
	_ = s.conn.CloseResponse()
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
	return s.md
}

func (s *httpStream) Close() {
	s.end()
	if s.rmu.TryLock() {
		if !s.resDone {
			s.resDone = true
			_ = s.conn.CloseResponse()
		}
		s.rmu.Unlock()
	}
	if s.smu.TryLock() {
		if !s.reqClosed {
			s.reqClosed = true
			_ = s.conn.CloseRequest()
		}
		s.smu.Unlock()
	}
}
