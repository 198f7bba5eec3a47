package httpzerodial

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// OpenStream opens a stream (dispatch.ProtocolConn). Over HTTP/2 it is a
// bidirectional stream of connect-go, which carries every shape, its
// request headers sent at once so that a handler that sends first is not
// kept waiting. Over HTTP/1.1, which cannot carry both directions at once,
// it is a server stream, sent when the caller has sent its one message
// and closed its side (oneWay). A stream with a deadline sends it as a
// call does, and its request outlives the deadline as a call's does
// (detach): the handler's context ends with the deadline, not canceled.
func (c *httpConn) OpenStream(ctx context.Context, name string, md dispatch.Metadata) (dispatch.ProtocolStream, error) {
	cl := c.client(&c.streams, name, c.streamHC)
	if err := requestMetadata(http.Header{}, md); err != nil {
		return nil, err
	}
	s := &httpStream{cl: cl, md: md, name: name, codec: c.p.o.codec, c: c}
	if d, ok := ctx.Deadline(); ok {
		// The request outlives the deadline, as a call's does (detach),
		// and Receive returns at it all the same (receiver).
		s.ctx, s.end = c.detach(ctx, d)
		s.deadline, s.caller = d, ctx
		s.recv = &receiver{want: make(chan struct{}), got: make(chan []byte, 1), done: make(chan struct{}), quit: make(chan struct{})}
	} else {
		var cancel context.CancelFunc
		s.ctx, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(c.ctx, cancel)
		s.end = func() {
			stop()
			cancel()
		}
	}
	if c.streamH1 {
		s.oneWay = true
		return s, nil
	}
	bs := cl.CallBidiStream(s.ctx)
	_ = requestMetadata(bs.RequestHeader(), md) // checked above
	if s.recv != nil {
		c.setTimeout(bs.RequestHeader(), time.Until(s.deadline))
	}
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
	end   func() // ends the request: nothing more can come
	cl    *connect.Client[outgoing, incoming]
	ctx   context.Context   // the request's
	md    dispatch.Metadata // the caller's, for a oneWay stream's request
	name  string
	codec codec.Codec
	c     *httpConn

	// A stream whose caller has a deadline: the request's context is
	// detached from the caller's (caller), whose deadline's passing does
	// not end it, and Receive waits for the handler's messages in recv's
	// goroutine, so that it returns at the deadline while the request
	// goes on until the server's answer.
	deadline time.Time
	caller   context.Context
	recv     *receiver

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
		if s.recv != nil {
			s.c.setTimeout(req.Header(), time.Until(s.deadline))
		}
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
	if s.recv != nil {
		return s.receiveByDeadline(conn)
	}
	data, md, err := s.receive(conn, &s.in)
	if err != nil {
		s.resDone, s.replyMD = true, md
	}
	return data, err
}

// receive receives the handler's next message from conn into in, and
// once the response has ended, its reply metadata and why, having ended
// the request.
func (s *httpStream) receive(conn connect.StreamingClientConn, in *incoming) ([]byte, dispatch.Metadata, error) {
	err := conn.Receive(in)
	if err == nil {
		return in.data, nil, nil
	}
	var md dispatch.Metadata
	if errors.Is(err, io.EOF) {
		md = replyMetadata(conn.ResponseHeader(), conn.ResponseTrailer(), false)
		err = io.EOF
	} else {
		md = errorMetadata(err)
		err = fromConnect(err)
	}
	_ = conn.CloseResponse()
	s.end()
	return nil, md, err
}

// receiver is the goroutine in which a stream with a deadline receives:
// each Receive asks it for one message (want) and waits for it (got), or
// for the caller's deadline. The message is s.in's, which the goroutine
// fills only when asked, once the caller is done with the one before.
// When the response ends the goroutine says why (end) and ends (done).
type receiver struct {
	want     chan struct{}
	got      chan []byte   // of one: the goroutine never waits on it
	quit     chan struct{} // closed by Close
	done     chan struct{} // closed once end is set
	end      received
	started  bool
	quitOnce sync.Once
}

// received is how a response ended: its reply metadata and why.
type received struct {
	md  dispatch.Metadata
	err error
}

// receiveByDeadline is Receive for a stream with a deadline. Called with
// rmu held.
func (s *httpStream) receiveByDeadline(conn connect.StreamingClientConn) ([]byte, error) {
	r := s.recv
	if !r.started {
		r.started = true
		go s.receiving(conn)
	}
	if err := s.caller.Err(); err != nil {
		// A Receive that returned at the deadline may have left its
		// message unread in got: nothing more is asked.
		return nil, err
	}
	select {
	case r.want <- struct{}{}:
	case <-r.done:
		return s.ended()
	case <-s.caller.Done():
		return nil, s.caller.Err()
	}
	select {
	case data := <-r.got:
		return data, nil
	case <-r.done:
		return s.ended()
	case <-s.caller.Done():
		// The handler's answer is on its way (its deadline) and ends
		// the request when it comes, or a second after the deadline.
		return nil, s.caller.Err()
	}
}

// ended returns why the receiver's response ended. Called with rmu held.
func (s *httpStream) ended() ([]byte, error) {
	s.resDone, s.replyMD = true, s.recv.end.md
	return nil, s.recv.end.err
}

// receiving is the receiver's goroutine: it receives when asked, until
// the response ends; once the stream is closed, or its request has ended,
// it reads the response to its end (the server's answer at its deadline,
// or the request's end a second after) without being asked, into a buffer
// of its own, since the caller may hold the last message still.
func (s *httpStream) receiving(conn connect.StreamingClientConn) {
	r := s.recv
	defer close(r.done)
	var sink incoming
	for {
		in := &s.in
		select {
		case <-r.want:
		case <-r.quit:
			in = &sink
		case <-s.ctx.Done():
			in = &sink
		}
		for {
			data, md, err := s.receive(conn, in)
			if err != nil {
				r.end = received{md, err}
				return
			}
			if in == &s.in {
				r.got <- data
				break
			}
		}
	}
}

func (s *httpStream) ReplyMetadata() dispatch.Metadata {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.replyMD
}

func (s *httpStream) Close() {
	if s.recv != nil && s.caller.Err() == context.DeadlineExceeded {
		s.closeAfterDeadline()
		return
	}
	s.end()
	if s.rmu.TryLock() {
		s.mu.Lock()
		conn := s.conn
		s.mu.Unlock()
		// A receiver's goroutine closes the response itself, once the
		// ended request has ended it.
		if !s.resDone && conn != nil && (s.recv == nil || !s.recv.started) {
			s.resDone = true
			_ = conn.CloseResponse()
		}
		s.rmu.Unlock()
	}
	s.closeRequestIfFree()
}

// closeRequestIfFree closes the request's side unless a Send or CloseSend
// is in it (smu), which is left to its user, as the struct's comment says.
func (s *httpStream) closeRequestIfFree() {
	if s.smu.TryLock() {
		if !s.reqClosed && s.conn != nil {
			s.reqClosed = true
			_ = s.conn.CloseRequest()
		}
		s.smu.Unlock()
	}
}

// closeAfterDeadline is Close once the caller's deadline has passed: the
// request is left to the server's answer, which says the deadline passed
// to the handler too (were it ended here, the handler's context would end
// canceled), read to its end by the receiver's goroutine, started here
// when no Receive has.
func (s *httpStream) closeAfterDeadline() {
	s.recv.quitOnce.Do(func() { close(s.recv.quit) })
	if s.rmu.TryLock() {
		s.mu.Lock()
		conn := s.conn
		s.mu.Unlock()
		if !s.resDone && conn != nil && !s.recv.started {
			s.recv.started = true
			go s.receiving(conn) // quit: it reads to the end
		}
		s.rmu.Unlock()
	}
	s.closeRequestIfFree()
}
