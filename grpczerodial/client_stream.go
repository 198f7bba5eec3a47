package grpczerodial

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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

func (cc *ClientConn) newStream(ctx context.Context, _ *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
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
	cs := &clientStream{ctx: ctx, cancel: cancel, method: method, co: co,
		msgs: make(chan []byte), ack: make(chan struct{}, 1), headerReady: make(chan struct{}), ended: make(chan struct{})}
	sctx := dispatch.CaptureReplyMetadata(outgoing(ctx), &cs.rmd)
	s, err := dispatch.OpenStream[codec.Raw, codec.Raw](sctx, cc.c, name)
	if err != nil {
		cancel()
		err = toStatusError(err)
		co.finish(err)
		return nil, err
	}
	cs.s = s
	go cs.read()
	return cs, nil
}

// clientStream is a caller's grpc.ClientStream. A goroutine of its own
// reads the handler's messages (read), so that Header can wait for the
// header while the messages wait for RecvMsg, and hands each to RecvMsg
// in turn.
type clientStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	method string
	co     callOpts
	s      *dispatch.Stream[codec.Raw, codec.Raw]
	rmd    dispatch.Metadata // the end's metadata (CaptureReplyMetadata)

	sendMu sync.Mutex
	buf    []byte

	msgs chan []byte   // a message's encoding, valid until ack
	ack  chan struct{} // RecvMsg is done with the last message

	headerReady chan struct{} // closed once header and headerErr are set
	header      metadata.MD
	headerErr   error

	// Set by read before it closes msgs and ended.
	err     error // io.EOF, or the stream's failure as a status
	trailer metadata.MD
	ended   chan struct{}
}

var _ grpc.ClientStream = (*clientStream)(nil)

// read hands the handler's messages to RecvMsg and records the stream's
// end; it returns when the stream has ended (the handler returned, or ctx
// ended), closing msgs.
func (cs *clientStream) read() {
	headerSet := false
	setHeader := func(h metadata.MD) {
		if !headerSet {
			headerSet = true
			cs.header = h
			close(cs.headerReady)
		}
	}
	end := error(io.EOF)
	defer func() {
		h, t := fromDispatchMD(cs.rmd)
		if !headerSet && len(h) == 0 && end != io.EOF {
			// The handler failed before sending anything: no header at
			// all, and Header says why, as grpc-go's does for a
			// trailers-only response.
			cs.headerErr = end
		}
		setHeader(h) // a header that came with the end (no message before it)
		cs.trailer = t
		cs.err = end
		cs.co.deliver(cs.header, cs.trailer)
		close(cs.msgs)
		close(cs.ended)
		cs.cancel()
		if end == io.EOF {
			cs.co.finish(nil)
		} else {
			cs.co.finish(end)
		}
	}()
loop:
	for p, err := range cs.s.Recv() {
		if err != nil {
			end = toStatusError(err)
			break
		}
		b := *p
		if len(b) == 0 {
			end = status.Error(codes.Internal, "grpczerodial: an empty frame on a stream of "+cs.method)
			break
		}
		switch b[0] {
		case kindHeader:
			var dmd dispatch.Metadata
			if err := codec.Msgpack.Unmarshal(b[1:], &dmd); err != nil {
				end = status.Errorf(codes.Internal, "grpczerodial: decoding the header of %s: %v", cs.method, err)
				break loop
			}
			h, _ := fromDispatchMD(dmd)
			if h == nil {
				h = metadata.MD{}
			}
			setHeader(h)
			continue
		case kindMsg:
		default:
			end = status.Errorf(codes.Internal, "grpczerodial: a frame of unknown kind %d on a stream of %s", b[0], cs.method)
			break loop
		}
		setHeader(metadata.MD{}) // a message without a header before it: an empty one
		select {
		case cs.msgs <- b[1:]:
		case <-cs.ctx.Done():
			end = status.FromContextError(cs.ctx.Err()).Err()
			break loop
		}
		select {
		case <-cs.ack:
		case <-cs.ctx.Done():
			end = status.FromContextError(cs.ctx.Err()).Err()
			break loop
		}
	}
}

func (cs *clientStream) Context() context.Context { return cs.ctx }

// Header waits for the handler's header: sent before its first message,
// or with the stream's end. A stream that failed before the handler sent
// anything has none: Header returns its status.
func (cs *clientStream) Header() (metadata.MD, error) {
	select {
	case <-cs.headerReady:
	case <-cs.ctx.Done():
		select {
		case <-cs.headerReady:
		default:
			return nil, status.FromContextError(cs.ctx.Err()).Err()
		}
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

func (cs *clientStream) CloseSend() error {
	cs.sendMu.Lock()
	defer cs.sendMu.Unlock()
	if err := cs.s.CloseSend(); err != nil {
		return sendError(err)
	}
	return nil
}

// SendMsg sends m. Once the stream has ended it returns io.EOF, as
// grpc-go's does; RecvMsg then says how it ended.
func (cs *clientStream) SendMsg(m any) error {
	cs.sendMu.Lock()
	defer cs.sendMu.Unlock()
	b, err := marshal(cs.buf[:0], m, "a message of "+cs.method)
	if err != nil {
		return toStatusError(err)
	}
	cs.buf = b
	raw := codec.Raw(b)
	if err := cs.s.Send(&raw); err != nil {
		return sendError(err)
	}
	return nil
}

// sendError is what SendMsg and CloseSend return for dispatch's err: the
// context's status when it ended, io.EOF for a stream the handler ended.
func sendError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	return io.EOF
}

// RecvMsg decodes the handler's next message into m. After the last it
// returns io.EOF, or the handler's status.
func (cs *clientStream) RecvMsg(m any) error {
	b, ok := <-cs.msgs
	if !ok {
		return cs.err
	}
	err := unmarshal(b, m, "a message of "+cs.method)
	cs.ack <- struct{}{}
	if err != nil {
		cs.cancel()
		return status.Errorf(codes.Internal, "grpczerodial: %v", err)
	}
	return nil
}
