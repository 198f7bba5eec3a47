package grpczerodial

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// NewStream opens a stream of the method (gRPC's full name), of any of
// the three shapes, as generated clients do. As with grpc-go, the stream
// ends once RecvMsg has returned an error, or when ctx ends; a stream
// abandoned before either holds a goroutine and the handler until then.
func (cc *ClientConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if len(cc.stream) == 0 {
		return cc.newStream(ctx, desc, method, opts...)
	}
	return cc.stream[0](ctx, desc, nil, method, cc.streamer(1), opts...)
}

func (cc *ClientConn) streamer(i int) grpc.Streamer {
	if i == len(cc.stream) {
		return func(ctx context.Context, desc *grpc.StreamDesc, _ *grpc.ClientConn, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return cc.newStream(ctx, desc, method, opts...)
		}
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, _ *grpc.ClientConn, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return cc.stream[i](ctx, desc, nil, method, cc.streamer(i+1), opts...)
	}
}

func (cc *ClientConn) newStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	co, err := callOptions(opts)
	if err != nil {
		co.finish(err)
		return nil, err
	}
	name, err := dispatchName(method)
	if err != nil {
		co.finish(err)
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cs := &clientStream{ctx: ctx, cancel: cancel, method: method, what: "a message of " + method, co: co, ended: make(chan struct{}), oneReply: desc != nil && !desc.ServerStreams, oneRequest: desc != nil && !desc.ClientStreams}
	sctx := outgoing(ctx)
	if co.codec == nil {
		sctx = dispatch.WithMetadata(sctx, framed)
	}
	sctx = dispatch.CaptureReplyMetadata(sctx, &cs.rmd)
	s, err := dispatch.OpenStream[codec.Raw, codec.Raw](sctx, cc.c, name)
	if err != nil {
		cancel()
		err = toStatusError(err)
		co.finish(err)
		return nil, err
	}
	cs.s = s
	co.fillPeer(s.CallInfo())
	cs.next, cs.stop = iter.Pull2(s.Recv())
	// When ctx ends, the stream does (dispatch ends it), and so does the
	// reading of it, even if RecvMsg is never called again.
	cs.recvMu.Lock() // the function may run at once: cs is set up first
	cs.unwatch = context.AfterFunc(ctx, func() {
		cs.recvMu.Lock()
		defer cs.recvMu.Unlock()
		cs.finish(status.FromContextError(ctx.Err()).Err())
	})
	cs.recvMu.Unlock()
	return cs, nil
}

// framed asks a Registrar's stream for its frames of two kinds, so that
// the header can come before the messages (server_stream.go).
var framed = dispatch.Metadata{framesKey: "1"}

// clientStream is a caller's grpc.ClientStream. It reads the handler's
// frames as RecvMsg and Header ask for them, through an iter.Pull2 of the
// dispatch stream's Recv: Header reads until the header (or the first
// message, kept for RecvMsg, or the end) arrives.
type clientStream struct {
	ctx     context.Context
	cancel  context.CancelFunc
	unwatch func() bool
	method  string
	what    string // "a message of <method>", words made once, not for each message
	co      callOpts
	// oneReply: a client stream, whose handler sends one message; RecvMsg
	// reads on to the end after it, as grpc-go's does.
	oneReply bool
	// oneRequest: a stream whose caller sends one message (a server
	// stream): SendMsg of it never says the stream ended (SendMsg).
	oneRequest bool
	s          *dispatch.Stream[codec.Raw, codec.Raw]
	rmd        dispatch.Metadata // the end's metadata (CaptureReplyMetadata)

	sendMu sync.Mutex
	buf    []byte

	recvMu     sync.Mutex // one reader of the stream at a time
	next       func() (*codec.Raw, error, bool)
	stop       func()
	pending    []byte // a message Header read ahead, for RecvMsg
	hasPending bool
	headerSet  bool
	header     metadata.MD
	headerErr  error // set with the header when the stream failed before sending any
	finished   bool
	endRead    bool  // the stream's end came through next, its metadata with it
	err        error // io.EOF, or the stream's failure as a status

	trailer metadata.MD   // set before ended is closed
	ended   chan struct{} // closed once the stream has ended
}

var _ grpc.ClientStream = (*clientStream)(nil)

// pull reads the next frames of the stream, under recvMu: it returns a
// message's encoding (valid until the next pull), or ok false once the
// stream has ended (finish has run), or — for Header, with forHeader set —
// once a header frame has come. A header frame is otherwise taken in
// passing.
func (cs *clientStream) pull(forHeader bool) (msg []byte, ok bool) {
	for !cs.finished {
		p, err, more := cs.next()
		switch {
		case !more:
			cs.endRead = true
			cs.finish(io.EOF)
			return nil, false
		case err != nil:
			cs.endRead = true
			cs.finish(toStatusError(err))
			return nil, false
		}
		b := *p
		if cs.co.codec != nil {
			// A stream of the Server's codec, not framed: every frame
			// is a message, and the header comes with the end.
			return b, true
		}
		if len(b) == 0 {
			cs.finish(status.Error(codes.Internal, "grpczerodial: an empty frame on a stream of "+cs.method))
			return nil, false
		}
		switch b[0] {
		case kindHeader:
			var dmd dispatch.Metadata
			if err := codec.Msgpack.Unmarshal(b[1:], &dmd); err != nil {
				cs.finish(status.Errorf(codes.Internal, "grpczerodial: decoding the header of %s: %v", cs.method, err))
				return nil, false
			}
			h, _ := fromDispatchMD(dmd)
			if h == nil {
				h = metadata.MD{}
			}
			cs.setHeader(h)
			if forHeader {
				return nil, false
			}
		case kindMsg:
			if !cs.headerSet {
				cs.setHeader(metadata.MD{}) // a message with no header before it: an empty one
			}
			return b[1:], true
		default:
			cs.finish(status.Errorf(codes.Internal, "grpczerodial: a frame of unknown kind %d on a stream of %s", b[0], cs.method))
			return nil, false
		}
	}
	return nil, false
}

func (cs *clientStream) setHeader(h metadata.MD) {
	if !cs.headerSet {
		cs.headerSet = true
		cs.header = h
	}
}

// finish ends the stream once, under recvMu, with end (io.EOF or a
// status): the reading stops, the handler's header (if it came with the
// end) and trailer are taken, the call options get them.
func (cs *clientStream) finish(end error) {
	if cs.finished {
		return
	}
	cs.finished = true
	cs.err = end
	cs.stop() // the range over the stream ends, which closes it
	cs.unwatch()
	var h, t metadata.MD
	if cs.endRead {
		// The end came through the stream, after its metadata; otherwise
		// (ctx ended, a message could not be decoded) the end may still
		// be arriving, and its metadata is not read.
		h, t = fromDispatchMD(cs.rmd)
		if cs.headerSet && len(h) > 0 {
			// The header came before the end, in its own frame: what
			// else the end carries is a trailer, as metadata set once a
			// gRPC stream's header has gone is. A dispatch interceptor's
			// reply metadata shows here, and so does the handler's
			// trailer over HTTP, whose trailers a stream's end reads as
			// plain keys (httpzerodial).
			t = metadata.Join(t, h)
			h = nil
		}
	}
	if !cs.headerSet && len(h) == 0 && end != io.EOF {
		// The handler failed before sending anything: no header at
		// all, and Header says why, as grpc-go's does for a
		// trailers-only response.
		cs.headerErr = end
	}
	cs.setHeader(h) // a header that came with the end (no message before it)
	cs.trailer = t
	close(cs.ended)
	cs.cancel()
	cs.co.deliver(cs.header, cs.trailer)
	if end == io.EOF {
		end = nil
	}
	cs.co.finish(end)
}

func (cs *clientStream) Context() context.Context { return cs.ctx }

// Header waits for the handler's header: sent before its first message,
// or with the stream's end. A stream that failed before the handler sent
// anything has none: Header returns its status.
func (cs *clientStream) Header() (metadata.MD, error) {
	cs.recvMu.Lock()
	defer cs.recvMu.Unlock()
	if !cs.headerSet && !cs.hasPending {
		cs.pending, cs.hasPending = cs.pull(true)
	}
	if cs.headerErr != nil {
		return nil, cs.headerErr
	}
	return cs.header, nil
}

// Trailer returns the handler's trailer once RecvMsg has returned an error
// (the stream has ended); nil before.
func (cs *clientStream) Trailer() metadata.MD {
	select {
	case <-cs.ended:
		return cs.trailer
	default:
		return nil
	}
}

// CloseSend closes the caller's side. It never fails, as grpc-go's does
// not: a stream that has ended (its context did, say) has nothing to
// close, and RecvMsg says how it ended — a generated CloseAndRecv returns
// CloseSend's error as it is.
func (cs *clientStream) CloseSend() error {
	cs.sendMu.Lock()
	defer cs.sendMu.Unlock()
	_ = cs.s.CloseSend()
	return nil
}

// SendMsg sends m. Once the stream has ended it returns io.EOF, as
// grpc-go's does; RecvMsg then says how it ended.
func (cs *clientStream) SendMsg(m any) error {
	cs.sendMu.Lock()
	defer cs.sendMu.Unlock()
	b, err := cs.co.marshal(cs.buf[:0], m, cs.what)
	if err != nil {
		return toStatusError(err)
	}
	cs.buf = b
	raw := codec.Raw(b)
	if err := cs.s.Send(&raw); err != nil {
		err = sendError(err)
		if err == io.EOF && cs.oneRequest {
			// The handler answered and ended before the message's write
			// returned (HTTP's streams may): generated code takes
			// SendMsg's error for the open's and never reads the stream,
			// so, as grpc-go does for a stream that is not the client's,
			// nil, and RecvMsg says how it ended.
			return nil
		}
		return err
	}
	return nil
}

// sendError is what SendMsg returns for dispatch's err: a
// message over the frame limit, which was not sent (the stream goes on),
// is ResourceExhausted; any other failure means the stream has ended, and
// is io.EOF, as grpc-go's is: RecvMsg says how it ended.
func sendError(err error) error {
	if errors.Is(err, transport.ErrFrameTooLarge) {
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return io.EOF
}

// RecvMsg decodes the handler's next message into m. After the last it
// returns io.EOF, or the handler's status.
func (cs *clientStream) RecvMsg(m any) error {
	cs.recvMu.Lock()
	defer cs.recvMu.Unlock()
	b, ok := cs.pending, cs.hasPending
	cs.pending, cs.hasPending = nil, false
	if !ok {
		b, ok = cs.pull(false)
	}
	if !ok {
		return cs.err
	}
	if err := cs.co.unmarshal(b, m, cs.what, ""); err != nil {
		err = status.Error(codes.Internal, err.(*dispatch.Error).Message)
		cs.finish(err)
		return err
	}
	if cs.oneReply {
		if _, more := cs.pull(false); more {
			err := status.Errorf(codes.Internal, "grpczerodial: %s sent a second message, where its caller expects one", cs.method)
			cs.finish(err)
			return err
		}
		if cs.err != io.EOF {
			return cs.err
		}
	}
	return nil
}
