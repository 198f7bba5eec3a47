package grpczerodial

import (
	"context"
	"io"
	"iter"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// To a ClientConn, which says so in the stream's metadata (framesKey), a
// stream's messages from handler to caller each begin with a byte that
// says what follows: a message (its protobuf encoding), or the header the
// handler sent before its first message (grpc.ServerStream's SendHeader,
// or the first SendMsg after SetHeader), as dispatch metadata in msgpack.
// To any other caller (dispatch.OpenStream of codec.Raw, say) the messages
// are the encodings alone, and the header goes with the end. The caller's
// messages are the encodings alone: its header is the stream's metadata.
// The trailer, and a header never sent, go with the stream's end as its
// reply metadata.
const (
	kindMsg    byte = 0
	kindHeader byte = 1
)

// framesKey is the metadata entry by which a ClientConn's stream asks for
// the framing above. The handler's incoming metadata does not show it.
const framesKey = "grpczerodial-frames"

// streamHandler serves one gRPC streaming method, of any of the three
// shapes, as a dispatch stream of encoded messages.
func (r *Registrar) streamHandler(impl any, full string, sd grpc.StreamDesc) func(context.Context, *dispatch.ServerStream[codec.Raw, codec.Raw]) error {
	info := &grpc.StreamServerInfo{FullMethod: full, IsClientStream: sd.ClientStreams, IsServerStream: sd.ServerStreams}
	h := sd.Handler
	what := "a message of " + full
	return func(ctx context.Context, s *dispatch.ServerStream[codec.Raw, codec.Raw]) error {
		v, _ := dispatch.MetadataValue(ctx, framesKey)
		ss := &serverStream{s: s, method: full, what: what, framed: v == "1"}
		ss.ctx = handlerContext(ctx, streamTransport{ss}, &ss.peer)
		ss.next, ss.stop = iter.Pull2(s.Recv())
		defer ss.release()
		var err error
		if r.stream != nil {
			err = r.stream(impl, ss, info, h)
		} else {
			err = h(impl, ss)
		}
		if md := ss.seal(); md != nil {
			if serr := dispatch.SetReplyMetadata(ctx, md); serr != nil {
				return serr
			}
		}
		return toDispatchError(err)
	}
}

// serverStream is a handler's grpc.ServerStream.
type serverStream struct {
	ctx    context.Context
	peer   peer.Peer // the handler's context's (peer.FromContext)
	s      *dispatch.ServerStream[codec.Raw, codec.Raw]
	method string
	what   string // "a message of <method>", for the words of a message's failures
	framed bool   // the caller is a ClientConn: kinds of frames, the header in its own

	recvMu sync.Mutex // one RecvMsg at a time, and release after it
	next   func() (*codec.Raw, error, bool)
	stop   func()
	ended  bool // next said the caller's messages are over, or release ran

	sendMu sync.Mutex // one message or header on the stream at a time
	buf    codec.Raw

	mu         sync.Mutex
	header     metadata.MD
	trailer    metadata.MD
	headerSent bool
	sealed     bool
}

var (
	_ grpc.ServerStream          = (*serverStream)(nil)
	_ grpc.ServerTransportStream = streamTransport{}
)

// streamTransport is a stream's grpc.ServerTransportStream, whose
// SetTrailer returns an error where grpc.ServerStream's does not.
type streamTransport struct{ *serverStream }

func (t streamTransport) SetTrailer(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return errSealed
	}
	t.trailer = metadata.Join(t.trailer, md)
	return nil
}

func (ss *serverStream) Context() context.Context { return ss.ctx }
func (ss *serverStream) Method() string           { return ss.method }

func (ss *serverStream) SetHeader(md metadata.MD) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case ss.sealed:
		return errSealed
	case ss.headerSent:
		return errHeaderSent
	}
	ss.header = metadata.Join(ss.header, md)
	return nil
}

func (ss *serverStream) SendHeader(md metadata.MD) error {
	ss.mu.Lock()
	switch {
	case ss.sealed:
		ss.mu.Unlock()
		return errSealed
	case ss.headerSent:
		ss.mu.Unlock()
		return errHeaderSent
	}
	h := metadata.Join(ss.header, md)
	if !ss.framed {
		// No frame for a header: it is the reply metadata so far, which
		// goes with the end, as it would have come before any message,
		// or in a header of the protocol's before it (httpzerodial's
		// response headers); the caller learns the handler is ready.
		ss.header = h
		ss.headerSent = true
		ss.mu.Unlock()
		if err := ss.holdHeader(h); err != nil {
			return err
		}
		ss.s.Ready()
		return nil
	}
	ss.headerSent = true
	ss.mu.Unlock()
	ss.sendMu.Lock()
	defer ss.sendMu.Unlock()
	return ss.sendHeader(h)
}

// SetTrailer adds to the trailer; unlike the others it cannot fail, as
// grpc.ServerStream's cannot: one set after the handler returned is lost.
func (ss *serverStream) SetTrailer(md metadata.MD) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.sealed {
		ss.trailer = metadata.Join(ss.trailer, md)
	}
}

// sendHeader sends h as the stream's header frame, under sendMu.
func (ss *serverStream) sendHeader(h metadata.MD) error {
	dmd := make(dispatch.Metadata, len(h))
	toDispatchMD(dmd, h, false)
	b, err := codec.Msgpack.Marshal(dmd)
	if err != nil {
		return toStatusError(err)
	}
	ss.buf = append(append(ss.buf[:0], kindHeader), b...)
	if err := ss.s.Send(&ss.buf); err != nil {
		return toStatusError(err)
	}
	return nil
}

// holdHeader sets h as the reply metadata so far, for a caller without
// framing: it goes with the end, or before the first message where the
// path has a header of its own (dispatch.StreamHeaderSender).
func (ss *serverStream) holdHeader(h metadata.MD) error {
	if err := dispatch.SetReplyMetadata(ss.ctx, replyMD(h, nil)); err != nil {
		return toStatusError(err)
	}
	return nil
}

func (ss *serverStream) SendMsg(m any) error {
	ss.sendMu.Lock()
	defer ss.sendMu.Unlock()
	ss.mu.Lock()
	var h metadata.MD
	if !ss.headerSent {
		ss.headerSent = true
		h = ss.header
	}
	ss.mu.Unlock()
	if len(h) > 0 {
		send := ss.sendHeader
		if !ss.framed {
			send = ss.holdHeader
		}
		if err := send(h); err != nil {
			return err
		}
	}
	b := ss.buf[:0]
	if ss.framed {
		b = append(b, kindMsg)
	}
	b, err := marshal(b, m, ss.what)
	if err != nil {
		return toStatusError(err)
	}
	ss.buf = b
	if err := ss.s.Send(&ss.buf); err != nil {
		return toStatusError(err)
	}
	return nil
}

func (ss *serverStream) RecvMsg(m any) error {
	ss.recvMu.Lock()
	defer ss.recvMu.Unlock()
	if ss.ended {
		return io.EOF
	}
	p, err, ok := ss.next()
	switch {
	case !ok:
		ss.ended = true
		return io.EOF
	case err != nil:
		ss.ended = true
		return toStatusError(err)
	}
	if err := unmarshal(*p, m, ss.what, ""); err != nil {
		return toStatusError(err)
	}
	return nil
}

// release ends the reading of the caller's messages when the handler
// returns. A goroutine of the handler's still in RecvMsg (which gRPC's
// rules forbid) keeps it: its RecvMsg ends with the stream.
func (ss *serverStream) release() {
	if ss.recvMu.TryLock() {
		ss.ended = true
		ss.stop()
		ss.recvMu.Unlock()
	}
}

// seal ends the setting of header and trailer, and returns what goes with
// the stream's end: the trailer, and the header if it was never sent.
func (ss *serverStream) seal() dispatch.Metadata {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.sealed = true
	var h metadata.MD
	if !ss.headerSent {
		h = ss.header
	}
	return replyMD(h, ss.trailer)
}
