package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/rpcwire"
	"github.com/zerodial/transport/internal/signal"
	"github.com/zerodial/transport/internal/sweep"
)

// clientConn is one socket's worth of calls: a writer shared by the callers
// and a read loop that hands each reply to its call.
type clientConn struct {
	sock  transport.Socket
	path  Path // the Client's netPath, which its streams' failures name
	codec codec.Codec
	ctype string
	log   *slog.Logger // says why the connection failed (WithLogger)

	// sending is the send lock: a channel, so a caller can stop waiting
	// for it when its context ends.
	sending chan struct{}
	req     transport.Message
	buf     []byte
	// wdMu orders a context's interruption of a Send against the Send's end,
	// so a stale interruption deadline never outlives its Send. sendGen
	// numbers the Sends, so that an interruption whose function ran late
	// (its context ended as its Send did) never reaches the next caller's.
	wdMu        sync.Mutex
	interrupted bool
	inSend      bool
	sendGen     uint64

	mu      sync.Mutex
	next    uint64   // the next sequence number never used
	free    []uint64 // numbers whose replies have come back, for reuse
	pending map[uint64]*pending
	// streams are the streams whose end has not arrived, by Seq, which
	// they take from the same numbers as calls.
	streams map[uint64]*clientStream
	// ended is why the connection ended, unset while it works. It is set
	// under mu with pending and streams swapped out, so that a call or
	// stream that finds it unset under mu is in the maps fail answers.
	ended signal.Signal
	done  signal.Signal // set when the read loop has returned

	// batch is sock's BatchSender, when it has one: requests go through
	// it, so that the requests of callers sending at once share a write.
	batch transport.BatchSender
	// async is sock's SendAsync, when it has one: stream messages go
	// through it, so that a stream of small messages is written in
	// batches (BenchmarkStream).
	async transport.AsyncSender

	// serverDraining is set when the server said it is shutting down
	// (WIRE.md, Drain): new calls are refused here as the server would
	// refuse them, and never sent, so that the server can close the
	// connection without losing one.
	serverDraining atomic.Bool

	// role says who reads sock: the read loop, or a caller reading its
	// own reply (readRole); waiter is sock's FrameWaiter, without which
	// the read loop always reads. rmsg is the message the reader reads
	// into, whoever it is.
	role   readRole
	waiter transport.FrameWaiter
	rmsg   transport.Message
	// quiet is the quiet sweep that gives the reading back (readRole):
	// its Client's, shared by the connections it makes.
	quiet *sweep.Group

	// pendings keeps the pending calls done with, for the next calls. The
	// connection's own rather than the process's: a pending's channel is
	// then made by the connection's users, inside the testing/synctest
	// bubble the connection was made in, and never waited on in another.
	pendings sync.Pool
}

// drain records the server's Drain notice and acknowledges it. The flag is
// set before the acknowledgement takes the send lock, and a new call
// checks it under that lock: every call sent precedes the
// acknowledgement, and none follows it.
func (cc *clientConn) drain() {
	if cc.serverDraining.Swap(true) {
		return
	}
	go func() {
		if cc.lockSend(context.Background()) != nil {
			return
		}
		defer cc.unlockSend()
		_ = cc.sock.Send(&transport.Message{Header: map[string]string{rpcwire.Drain: "ack"}})
	}()
}

// pending is a call waiting for its reply. Pooled by its connection
// (clientConn.pendings): a call costs no channel.
type pending struct {
	name    string
	reply   any
	capture *capture // where the reply's metadata goes; nil: nowhere
	err     error
	done    chan struct{}
}

// abandoned marks a sequence number whose caller gave up. The number is
// never reused, so a late reply can never be taken for the reply to a later
// call.
var abandoned = new(pending)

func newClientConn(sock transport.Socket, path Path, c codec.Codec, log *slog.Logger, quiet *sweep.Group) *clientConn {
	cc := &clientConn{
		path:    path,
		quiet:   quiet,
		sock:    sock,
		codec:   c,
		ctype:   c.Name(),
		log:     log,
		req:     transport.Message{Header: make(map[string]string, 4)},
		sending: make(chan struct{}, 1),
		pending: make(map[uint64]*pending),
		streams: make(map[uint64]*clientStream),
	}
	cc.async, _ = sock.(transport.AsyncSender)
	cc.batch, _ = sock.(transport.BatchSender)
	cc.waiter, _ = sock.(transport.FrameWaiter)
	cc.role.cond.L = &cc.role.mu
	go cc.readLoop()
	return cc
}

func (cc *clientConn) failed() bool { return cc.ended.IsSet() }

// failure returns why the connection ended, or nil while it works.
func (cc *clientConn) failure() error { return cc.ended.Err() }

// close fails every call in flight with ErrShutdown.
func (cc *clientConn) close() {
	cc.fail(ErrShutdown)
	cc.sock.Close()
	<-cc.done.Signal()
}

// fail ends the connection for every call in flight. The first error
// given is the one every call gets, later ones included.
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	cc.ended.Set(err) // refused, and no matter, if it ended already
	ps := cc.pending
	cc.pending = make(map[uint64]*pending)
	ss := cc.streams
	cc.streams = make(map[uint64]*clientStream)
	cc.mu.Unlock()
	cc.haltReading()
	err = cc.failure()
	for _, s := range ss {
		s.failed(err)
	}
	for _, p := range ps {
		if p == abandoned {
			continue
		}
		p.err = err
		p.done <- struct{}{}
	}
}

func (cc *clientConn) call(ctx context.Context, name string, args, reply any) error {
	p := cc.newPending()
	p.name, p.reply, p.err, p.capture = name, reply, nil, capturesOf(ctx)
	cc.mu.Lock()
	if err := cc.ended.Err(); err != nil {
		cc.mu.Unlock()
		cc.release(p)
		return err
	}
	seq := cc.takeSeq()
	cc.pending[seq] = p
	others := len(cc.pending) > 1
	cc.mu.Unlock()

	if err := cc.send(ctx, seq, name, args, others); err != nil {
		if cc.remove(seq, p, true) {
			if err == errShuttingDown && p.capture != nil {
				p.capture.deliver(nil) // as the server's refusal would
			}
			cc.release(p)
			return err
		}
		<-p.done // the connection failed meanwhile and answered p
		cc.release(p)
		if ctx.Err() != nil {
			return ctxError(ctx)
		}
		return err
	}

	if cc.takeRead() {
		cc.readOwn(ctx, p)
	}
	if d := ctx.Done(); d == nil {
		<-p.done
	} else {
		select {
		case <-p.done:
		case <-d:
			if cc.remove(seq, p, false) {
				// A passed deadline ends the handler's context on the
				// server by itself (the Timeout header), with the same
				// error the handler would see on the shortcut; only a
				// cancellation needs telling.
				if ctx.Err() != context.DeadlineExceeded {
					cc.sendCancel(seq)
				}
				cc.release(p)
				return ctxError(ctx)
			}
			<-p.done // the reply is being delivered; take it
		}
	}
	err := p.err
	cc.release(p)
	return err
}

// takeSeq returns a Seq for a new call or stream, with cc.mu held.
// Reusing numbers keeps them small and few, so the header strings that
// carry them are the same ones again and cost no allocation.
func (cc *clientConn) takeSeq() uint64 {
	if n := len(cc.free); n > 0 {
		seq := cc.free[n-1]
		cc.free = cc.free[:n-1]
		return seq
	}
	seq := cc.next
	cc.next++
	return seq
}

// newPending returns a pending call to fill in, reused if the connection
// has one.
func (cc *clientConn) newPending() *pending {
	if p, _ := cc.pendings.Get().(*pending); p != nil {
		return p
	}
	return &pending{done: make(chan struct{}, 1)}
}

// release gives p back to its connection, for a later call.
func (cc *clientConn) release(p *pending) {
	p.reply, p.err, p.capture = nil, nil, nil
	cc.pendings.Put(p)
}

// remove takes the call p, of Seq seq, out of the pending calls, reporting
// whether it was there (if not, the read loop or fail already owns it).
// unsent says the request never left, so seq may be reused at once;
// otherwise seq stays reserved until its reply arrives.
//
// It takes p, not whatever call holds seq: once the read loop has taken
// p's reply, seq is free, and the next call may hold it already. Removing
// by number alone marked that call abandoned, so that its reply was
// dropped and its caller waited for ever, while p went back to the pool
// with its reply's signal unread, for a later call to take as its own
// (TestCancelInterruptsOnlyItsCaller: a nil reply decoded, a panic).
func (cc *clientConn) remove(seq uint64, p *pending, unsent bool) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.pending[seq] != p {
		return false
	}
	if unsent {
		delete(cc.pending, seq)
		cc.free = append(cc.free, seq)
	} else {
		cc.pending[seq] = abandoned
	}
	return true
}

// send sends a request. others says other calls are in flight on the
// connection: their requests may be about to join this one's write.
func (cc *clientConn) send(ctx context.Context, seq uint64, name string, args any, others bool) error {
	if err := cc.lockSend(ctx); err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			cc.unlockSend()
		}
	}()
	if cc.serverDraining.Load() {
		return errShuttingDown
	}
	body, err := encodeArgs(cc.codec, cc.buf[:0], name, args)
	if err != nil {
		return err
	}
	var d callDesc
	d.fromContext(ctx, name)
	requestHeader(cc.req.Header, &d, rpcwire.FormatSeq(seq), cc.ctype)
	cc.req.Body = body
	if cc.batch != nil && len(body) <= maxBatchedBody {
		// The request is copied into the socket's queue, and the send
		// lock let go before any write: the next callers queue theirs
		// meanwhile, and one write takes them all (BenchmarkParallel).
		var flush bool
		flush, err = cc.batch.Queue(&cc.req)
		cc.req.Body = nil
		cc.buf = body[:0]
		locked = false
		cc.unlockSend()
		if flush && err == nil {
			if others {
				// Let the callers that are ready to send queue first.
				runtime.Gosched()
			}
			err = cc.batch.Flush(ctx)
		}
	} else {
		err = cc.sendInterruptible(ctx, &cc.req)
		cc.req.Body = nil
		if cap(body) <= maxKeptBuffer {
			cc.buf = body[:0]
		}
	}
	if err != nil {
		if isFrameTooLarge(err) {
			return argsTooLarge(name, err) // nothing was sent; the connection is fine
		}
		return cc.sendFailed(ctx, err, name)
	}
	return nil
}

// sendFailed is what a call's request or a stream's frame gets when its
// Send failed with err, other than for being over the frame limit; name
// is the method of the call, for the log ("" for a stream's frame).
func (cc *clientConn) sendFailed(ctx context.Context, err error, name string) error {
	if ctx.Err() != nil && errors.Is(err, transport.ErrTimeout) {
		// The caller's context interrupted the Send. A transport whose
		// Send stopped part way closes the socket itself (the Socket
		// contract), and the read loop then fails the connection; one
		// that stopped before sending anything is still fine.
		return ctxError(ctx)
	}
	// Part of the frame may be out: the connection cannot be trusted.
	// The caller gets what every call on the connection gets: the
	// first cause seen, by the read loop or here (ErrShutdown's
	// doc says how a peer's hang-up reads the same from both).
	if !cc.failed() {
		args := []any{"remote", cc.sock.RemoteAddr(), "err", err}
		if name != "" {
			args = []any{"remote", cc.sock.RemoteAddr(), "method", name, "err", err}
		}
		cc.log.Warn("dispatch: sending failed; closing the connection", args...)
	}
	cc.fail(connFailed(err))
	cc.sock.Close()
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	return cc.failure()
}

// lockSend takes the send lock, or gives up when ctx ends.
func (cc *clientConn) lockSend(ctx context.Context) error {
	select {
	case cc.sending <- struct{}{}:
		return nil
	default:
	}
	select {
	case cc.sending <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctxError(ctx)
	case <-cc.done.Signal():
		return cc.failure()
	}
}

func (cc *clientConn) unlockSend() { <-cc.sending }

// sendInterruptible sends m, and makes the Send return if ctx ends while
// it is blocked (a peer that stopped reading): the caller must not wait
// much longer than its context allows, on any path. A Send the peer takes
// within frame.InterruptGrace of ctx's end completes, so that a context
// ending does not close a connection whose peer is well under its other
// callers (frame.InterruptGrace says why).
func (cc *clientConn) sendInterruptible(ctx context.Context, m *transport.Message) error {
	if ctx.Done() == nil {
		return cc.sock.Send(m)
	}
	cc.wdMu.Lock()
	cc.inSend, cc.interrupted = true, false
	cc.sendGen++
	gen := cc.sendGen
	cc.wdMu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		cc.wdMu.Lock()
		defer cc.wdMu.Unlock()
		if cc.inSend && cc.sendGen == gen {
			cc.interrupted = true
			_ = cc.sock.SetWriteDeadline(time.Now().Add(frame.InterruptGrace))
		}
	})
	err := cc.sock.Send(m)
	stop()
	cc.wdMu.Lock()
	cc.inSend = false
	if cc.interrupted {
		_ = cc.sock.SetWriteDeadline(time.Time{})
	}
	cc.wdMu.Unlock()
	return err
}

// sendCancel tells the server the caller gave up on seq. Best effort, and
// never a wait for the caller: if the send lock is busy, a goroutine sends
// it once the lock is free or the connection ends.
func (cc *clientConn) sendCancel(seq uint64) {
	m := &transport.Message{Header: map[string]string{rpcwire.Seq: rpcwire.FormatSeq(seq), rpcwire.Cancel: ""}}
	select {
	case cc.sending <- struct{}{}:
		_ = cc.sock.Send(m)
		cc.unlockSend()
		return
	default:
	}
	go func() {
		select {
		case cc.sending <- struct{}{}:
			_ = cc.sock.Send(m)
			cc.unlockSend()
		case <-cc.done.Signal():
		}
	}()
}

// zero sets *reply to its zero value.
func zero(reply any) { reflect.ValueOf(reply).Elem().SetZero() }

func isFrameTooLarge(err error) bool { return errors.Is(err, transport.ErrFrameTooLarge) }
