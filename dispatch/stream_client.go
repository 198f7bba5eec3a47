package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
	"github.com/zerodial/transport/internal/rpcwire"
)

// Streams on the network (WIRE.md, "Streams"): frames keyed by the caller's
// Seq, on the Client's one socket, beside unary calls.

// clientStream is the caller's side of a stream over the network.
type clientStream struct {
	callerWait
	cc      *clientConn
	name    string
	seq     uint64
	capture *capture
	in      *flow.Inbox  // what the handler sends; fed by the read loop
	out     *flow.Credit // the handler's window, for what the caller sends

	// sendMsg and buf are Send's and CloseSend's (one at a time); win is
	// the consumer's, for its window frames.
	sendMsg transport.Message
	buf     []byte
	win     transport.Message

	halfClosed atomic.Bool
	// askedReady says the open frame asked for the ready frame; announced
	// that the first window has come (the read loop's alone).
	askedReady bool
	announced  bool

	// readied is what Established waits for (under mu): the handler is
	// ready — the server's ready frame or first message, or, from a
	// server that sends no ready frame, its first window — or the stream
	// ended first (endErr says how).
	readied readiness

	// Under mu; the bools together, so that the struct keeps the
	// allocation size class it had before readiness.
	mu        sync.Mutex
	remoteEnd bool // the end arrived, or the connection failed
	gaveUp    bool // the caller stopped before the end: no capture
	cancelled bool // a Cancel went out: the Seq is never reused
	// unary says the end was a unary response, from a server that does
	// not know streams: it may answer each frame of the stream as a
	// request of its own, later, so the Seq is never reused either.
	unary    bool
	released bool // the Seq has left the connection's map
	// stopCtx ends the watch on ctx. The stream is in the connection's
	// map (so the read loop may end it) before the watch begins: unwatched
	// says it ended first, and the watch is stopped as soon as it begins.
	unwatched bool
	stopCtx   func() bool
	endErr    error // what the end said: Send's error from then on
	writers   int   // frames of the stream being written
}

// openStream opens a stream of name on the connection: it takes a Seq from
// the calls' and sends the open frame, with this end's window, asking for
// the ready frame when ready is set.
func (cc *clientConn) openStream(ctx context.Context, name string, window int, ready bool) (callerEnd, error) {
	s := &clientStream{callerWait: callerWait{ctx: ctx}, cc: cc, name: name, capture: capturesOf(ctx), out: flow.NewCredit(0, false), askedReady: ready}
	s.stream = s
	s.in = flow.NewInbox(window, s.grant)
	cc.mu.Lock()
	if err := cc.ended.Err(); err != nil {
		cc.mu.Unlock()
		return nil, err
	}
	s.seq = cc.takeSeq()
	cc.streams[s.seq] = s
	cc.mu.Unlock()
	cc.needReader() // a stream's messages are read by the read loop
	seqText := rpcwire.FormatSeq(s.seq)
	s.sendMsg.Header = map[string]string{rpcwire.Seq: seqText}
	s.win.Header = map[string]string{rpcwire.Seq: seqText, rpcwire.Stream: rpcwire.StreamWindow}

	h := make(map[string]string, fixedEntries)
	var d callDesc
	d.fromContext(ctx, name)
	requestHeader(h, &d, seqText, cc.ctype)
	openHeader(h, window, ready)
	if err := cc.writeOpen(ctx, &transport.Message{Header: h}); err != nil {
		cc.mu.Lock()
		if cc.streams[s.seq] == s { // not failed meanwhile
			delete(cc.streams, s.seq)
			if isFrameTooLarge(err) || err == errShuttingDown { // nothing was sent
				cc.free = append(cc.free, s.seq)
			}
		}
		cc.mu.Unlock()
		if err == errShuttingDown {
			return failedStream(ctx, err), nil // as the server's refusal would
		}
		if isFrameTooLarge(err) {
			return nil, openTooLarge(name, err)
		}
		return nil, err
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, s.ctxEnded)
		s.mu.Lock()
		over := s.unwatched
		if !over {
			s.stopCtx = stop
		}
		s.mu.Unlock()
		if over {
			stop()
		}
	}
	return s, nil
}

// writeOpen sends a stream's open frame, as writeFrame does, unless the
// server has said it is shutting down: then it sends nothing and returns
// errShuttingDown, as a new call would.
func (cc *clientConn) writeOpen(ctx context.Context, m *transport.Message) error {
	if err := cc.lockSend(ctx); err != nil {
		return err
	}
	defer cc.unlockSend()
	if cc.serverDraining.Load() {
		return errShuttingDown
	}
	return cc.writeLocked(ctx, m)
}

// post queues a stream message to be written with whatever else is
// queued (transport.AsyncSender). It needs no send lock: the socket keeps
// the order of its sends, and queuing never waits for the peer. A failure
// of the socket fails the connection.
//
// But for one refusal that is not the socket's: the write deadline
// by which another caller's context interrupts its Send under the send
// lock (sendInterruptible) refuses every frame once it has passed. That Send clears
// it before it lets the lock go, so the message is queued again under the
// lock; ctx, the stream's, bounds the wait for it.
func (cc *clientConn) post(ctx context.Context, m *transport.Message) error {
	err := cc.async.SendAsync(m)
	if errors.Is(err, transport.ErrTimeout) {
		if lerr := cc.lockSend(ctx); lerr != nil {
			return lerr
		}
		err = cc.async.SendAsync(m)
		cc.unlockSend()
	}
	if err == nil || isFrameTooLarge(err) {
		return err
	}
	cc.fail(connFailed(err))
	cc.sock.Close()
	return cc.failure()
}

// writeFrame sends m under the send lock, as a call's request goes. A
// failure that leaves the connection in doubt fails the connection.
func (cc *clientConn) writeFrame(ctx context.Context, m *transport.Message) error {
	if err := cc.lockSend(ctx); err != nil {
		return err
	}
	defer cc.unlockSend()
	return cc.writeLocked(ctx, m)
}

// writeLocked is writeFrame with the send lock held.
func (cc *clientConn) writeLocked(ctx context.Context, m *transport.Message) error {
	err := cc.sendInterruptible(ctx, m)
	if err == nil || isFrameTooLarge(err) {
		return err
	}
	return cc.sendFailed(ctx, err, "")
}

// giveUp records that the caller stopped before the end: a capture of
// reply metadata is left as it was, as a unary call's is.
func (s *clientStream) giveUp() {
	s.mu.Lock()
	s.gaveUp = true
	s.mu.Unlock()
}

func (s *clientStream) codec() codec.Codec { return s.cc.codec }

func (s *clientStream) named(err error) error { return callError(s.ctx, s.name, s.cc.path, err) }

func (s *clientStream) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remoteEnd
}

func (s *clientStream) next() (flow.Item, error) { return s.in.Next(s) }

func (s *clientStream) done() { s.in.Done() }

// beginWrite reserves the Seq for a frame about to be written, or reports
// false when the stream can take no more frames; endWrite releases it.
// The Seq is reused only once no frame of the old stream can follow the
// new stream's open.
func (s *clientStream) beginWrite() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remoteEnd || s.cancelled {
		return false
	}
	s.writers++
	return true
}

func (s *clientStream) endWrite() {
	s.mu.Lock()
	s.writers--
	free := s.writers == 0 && s.remoteEnd
	s.mu.Unlock()
	if free {
		s.release()
	}
}

// sendError is what Send returns on a stream that can take no more.
func (s *clientStream) sendError() error {
	if err := s.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endErr != nil {
		return s.endErr
	}
	return ErrStreamDone
}

func (s *clientStream) send(m any) error {
	if err := s.Check(); err != nil {
		return err
	}
	if s.halfClosed.Load() {
		return ErrStreamDone
	}
	body, err := encodeMsg(s.cc.codec, s.buf[:0], s.name, m)
	if err != nil {
		return err
	}
	s.buf = keep(body)
	if err := s.out.Acquire(len(body), s); err != nil {
		return err
	}
	if !s.beginWrite() {
		s.out.Unacquire(len(body))
		return s.sendError()
	}
	s.sendMsg.Header[rpcwire.Stream] = rpcwire.StreamMsg
	s.sendMsg.Body = body
	if s.cc.async != nil {
		err = s.cc.post(s.ctx, &s.sendMsg)
	} else {
		err = s.cc.writeFrame(s.ctx, &s.sendMsg)
	}
	s.sendMsg.Body = nil
	s.endWrite()
	if err != nil {
		s.out.Unacquire(len(body))
		if isFrameTooLarge(err) {
			return msgTooLarge(s.name, err)
		}
		return err
	}
	return nil
}

func (s *clientStream) closeSend() error {
	if s.halfClosed.Swap(true) {
		return nil
	}
	if !s.beginWrite() {
		return nil // over already: nothing to close
	}
	s.sendMsg.Header[rpcwire.Stream] = rpcwire.StreamEnd
	err := s.cc.writeFrame(s.ctx, &s.sendMsg)
	s.endWrite()
	return err
}

// grant returns n bytes of credit to the handler; called by the consumer.
func (s *clientStream) grant(n int) {
	if !s.beginWrite() {
		return
	}
	s.win.Header[rpcwire.Window] = rpcwire.FormatWindow(n)
	_ = s.cc.writeFrame(s.ctx, &s.win)
	s.endWrite()
}

// established waits until the handler is ready, or returns why not: the
// end's error when the stream ended first (nil if the handler returned
// without error), or the caller's reason to stop waiting.
func (s *clientStream) established() error {
	state, err := s.readied.await(&s.mu, s)
	if err != nil || state == isReady {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endErr
}

// ctxEnded tells the server the caller gave up when its context is
// cancelled; a passed deadline needs no telling (the Timeout header).
func (s *clientStream) ctxEnded() {
	s.giveUp()
	if s.ctx.Err() != context.DeadlineExceeded {
		s.cancel()
	}
}

// cancel sends a Cancel for a stream whose end has not arrived. Its Seq is
// then never reused, as an abandoned call's is not.
func (s *clientStream) cancel() {
	s.mu.Lock()
	send := !s.remoteEnd && !s.cancelled
	s.cancelled = true
	s.mu.Unlock()
	if send {
		s.cc.sendCancel(s.seq)
	}
}

func (s *clientStream) close() {
	s.closed.Set(ErrStreamDone)
	s.giveUp()
	if s.ctx.Err() != context.DeadlineExceeded {
		// After the deadline the Timeout header has ended the handler's
		// context, or is about to, with the error the shortcut gives.
		s.cancel()
	}
	s.in.Close()
	s.out.Abort(ErrStreamDone)
	s.unwatch()
}

// unwatch stops the watch on the caller's context, now or, if it has not
// begun yet, as soon as it begins.
func (s *clientStream) unwatch() {
	s.mu.Lock()
	stop := s.stopCtx
	s.stopCtx, s.unwatched = nil, true
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// end is the server's end of the stream, err its error (nil if the handler
// succeeded), md its reply metadata; from the read loop.
func (s *clientStream) end(err error, md Metadata) {
	s.mu.Lock()
	if s.remoteEnd {
		s.mu.Unlock()
		return
	}
	s.remoteEnd, s.endErr = true, err
	if !s.gaveUp && s.capture != nil {
		s.capture.deliver(md) // before the caller can see the end
	}
	free := s.writers == 0
	ready := s.readied.settleLocked(endedFirst) // ended before it was ready: Established says how
	s.mu.Unlock()
	closeWait(ready)
	s.in.Finish(err)
	if err == nil {
		err = ErrStreamDone
	}
	s.out.Abort(err)
	s.unwatch()
	if free {
		s.release()
	}
}

// release takes the stream out of the connection's map, and frees its Seq
// unless a Cancel went out for it.
func (s *clientStream) release() {
	s.mu.Lock()
	if s.released {
		s.mu.Unlock()
		return
	}
	s.released = true
	reuse := !s.cancelled && !s.unary
	s.mu.Unlock()
	cc := s.cc
	cc.mu.Lock()
	if cc.streams[s.seq] == s {
		delete(cc.streams, s.seq)
		if reuse {
			cc.free = append(cc.free, s.seq)
		}
	}
	cc.mu.Unlock()
}

// failed ends the stream with the connection's failure err.
func (s *clientStream) failed(err error) {
	s.mu.Lock()
	s.remoteEnd, s.endErr, s.released = true, err, true
	ready := s.readied.settleLocked(endedFirst)
	s.mu.Unlock()
	closeWait(ready)
	s.in.Finish(err)
	s.out.Abort(err)
	s.unwatch()
}

// streamFrame hands a frame of the server's to stream s; from the read
// loop, which it never makes wait. Its error is a protocol error.
func (cc *clientConn) streamFrame(s *clientStream, m *transport.Message) error {
	switch kind := m.Header[rpcwire.Stream]; kind {
	case rpcwire.StreamMsg:
		s.readied.settle(&s.mu, isReady) // the handler's first message says it is ready
		return s.in.Put(append(s.in.Buffer(), m.Body...))
	case rpcwire.StreamWindow:
		n, err := rpcwire.ParseWindow(m.Header[rpcwire.Window])
		if err != nil {
			return err
		}
		if !s.announced {
			s.announced = true
			if _, later := m.Header[rpcwire.Ready]; !later || !s.askedReady {
				// A server that sends no ready frame: that it has taken
				// the stream is all it tells.
				s.readied.settle(&s.mu, isReady)
			}
		}
		s.out.Grant(n)
	case rpcwire.StreamReady:
		s.readied.settle(&s.mu, isReady)
	case rpcwire.StreamEnd, "":
		// "": a unary response to the open frame, from a server that does
		// not know streams; its Error ends the stream as an end would.
		if kind == "" {
			s.mu.Lock()
			s.unary = true
			s.mu.Unlock()
		}
		var err error
		if msg, failed := m.Header[rpcwire.Error]; failed {
			err = wireError(m.Header, msg)
		}
		s.end(err, metadataOf(m.Header))
	default:
		return fmt.Errorf("unknown Stream %q", kind)
	}
	return nil
}
