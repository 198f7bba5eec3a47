package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/signal"
)

// codecClientConn is a connection to a net/rpc server through an
// rpc.ClientCodec (a callConn): sequence numbers, the calls waiting for
// their replies, one goroutine reading the responses and requests written
// one at a time, as net/rpc's Client does — with dispatch's rules. A call
// whose context ends returns at once, and the server's late reply is read
// and discarded: a reply is decoded into a value of the connection's own,
// and copied into the caller's reply under mu only while the caller still
// waits, so nothing the caller owns is touched once Call has returned.
type codecClientConn struct {
	codec rpc.ClientCodec
	// conn is the connection under codec when the Client dialled it
	// (DialCodec's), nil otherwise. When there is one, the connection is
	// ended by closing conn, which any goroutine may do, and codec is
	// closed by the read loop once its reading is over, with the send
	// lock held: no codec is then asked to Close while it reads or writes
	// (msgpackrpc's does not allow it; its Close and its read share a field
	// unguarded). Without one, codec is closed at once, while it may be
	// reading.
	conn   io.Closer
	remote net.Addr // for the log
	log    *slog.Logger

	// sending is the write lock: a channel, so that a caller can stop
	// waiting for it when its context ends. req is the header written
	// under it.
	sending chan struct{}
	req     rpc.Request
	// deadline sets the write deadline of the codec's connection, when
	// the Client knows it (DialCodec's), so that a caller's context can
	// interrupt a write; nil otherwise.
	deadline writeDeadliner
	// wmu orders a context's interruption of a write against the write's
	// end, so that only the write still under way (writing, number gen) is
	// interrupted; interrupted says it was.
	wmu         sync.Mutex
	writing     bool
	gen         uint64
	interrupted bool

	mu      sync.Mutex
	next    uint64 // the next Seq; never reused, as in net/rpc
	pending map[uint64]*codecPending
	// ended is why the connection ended, unset while it works. It is set
	// under mu with pending swapped out.
	ended signal.Signal
	done  signal.Signal // set when the read loop has returned
}

// codecPending is a call waiting for its reply. Its fields are guarded by
// the connection's mu; over is set once by whoever decides the call's
// outcome (its reply, the connection's failure, or its caller leaving),
// and only that one touches reply.
type codecPending struct {
	name    string
	reply   any          // the caller's, never touched once over is set by another
	typ     reflect.Type // *reply's type, of the value decoded
	capture *capture
	over    bool
	err     error
	done    chan struct{} // receives when the outcome is in place
}

// writeDeadliner is what of a net.Conn interrupts a write.
type writeDeadliner interface{ SetWriteDeadline(t time.Time) error }

// newCodecClientConn returns a connection over codec, whose peer is remote
// (for the log; may be nil). conn, when not nil, is the connection under
// codec, which ends the connection (see codecClientConn.conn); deadline,
// when not nil, sets its write deadline.
func newCodecClientConn(codec rpc.ClientCodec, conn io.Closer, deadline writeDeadliner, remote net.Addr, log *slog.Logger) *codecClientConn {
	cc := &codecClientConn{
		codec:    codec,
		conn:     conn,
		deadline: deadline,
		remote:   remote,
		log:      log,
		sending:  make(chan struct{}, 1),
		pending:  make(map[uint64]*codecPending),
	}
	go cc.readLoop()
	return cc
}

// failure returns why the connection ended, or nil while it works.
func (cc *codecClientConn) failure() error { return cc.ended.Err() }

// close fails every call in flight with ErrShutdown, closes the connection
// and returns once the read loop has (and, over a connection the Client
// dialled, has closed the codec).
func (cc *codecClientConn) close() {
	cc.fail(ErrShutdown)
	<-cc.done.Signal()
}

// fail ends the connection with err for every call in flight (the first
// error given wins) and closes conn, or the codec when there is no conn,
// which ends the read loop.
func (cc *codecClientConn) fail(err error) {
	cc.mu.Lock()
	first := cc.ended.Set(err)
	ps := cc.pending
	cc.pending = make(map[uint64]*codecPending)
	err = cc.ended.Err()
	for _, p := range ps {
		if !p.over {
			p.over, p.err = true, err
			p.done <- struct{}{}
		}
	}
	cc.mu.Unlock()
	if !first {
		return
	}
	if cc.conn != nil {
		cc.conn.Close()
		return
	}
	cc.codec.Close()
}

// errNoStreams is what opening a stream over a net/rpc codec gets.
func errNoStreams(name string) *Error {
	return &Error{Code: CodeUnimplemented, Message: "dispatch: net/rpc has no streams: " + name + " cannot be opened over a net/rpc codec"}
}

// openStream refuses: net/rpc has no streams.
func (cc *codecClientConn) openStream(_ context.Context, name string, _ int, _ bool) (callerEnd, error) {
	return nil, errNoStreams(name)
}

func (cc *codecClientConn) call(ctx context.Context, name string, args, reply any) error {
	p := &codecPending{name: name, reply: reply, typ: reflect.TypeOf(reply).Elem(), capture: capturesOf(ctx), done: make(chan struct{}, 1)}
	if err := cc.lockSend(ctx); err != nil {
		return err
	}
	cc.mu.Lock()
	if err := cc.ended.Err(); err != nil {
		cc.mu.Unlock()
		cc.unlockSend()
		return err
	}
	seq := cc.next
	cc.next++
	cc.pending[seq] = p
	cc.mu.Unlock()

	cc.req = rpc.Request{ServiceMethod: name, Seq: seq}
	if err := cc.write(ctx, &cc.req, args); err != nil {
		// The codec may have written part of the request: nothing after it
		// could be read by the server. net/rpc's Client keeps such a
		// connection; dispatch ends it (and the next call dials again),
		// with the send lock held, so that the read loop, which fails
		// when a codec closes itself on a failed write, waits for the
		// cause (readFailed).
		if cc.failure() == nil {
			cc.log.Warn("dispatch: writing a net/rpc request failed; closing the connection", "remote", cc.remote, "method", name, "err", err)
		}
		cc.fail(connFailed(fmt.Errorf("dispatch: writing the request of %s: %w", name, err)))
		cc.unlockSend()
		if ctx.Err() != nil {
			return ctxError(ctx) // the context ended first, as on every path
		}
		<-p.done // answered by fail
		return p.err
	}
	cc.unlockSend()

	if d := ctx.Done(); d == nil {
		<-p.done
	} else {
		select {
		case <-p.done:
		case <-d:
			cc.mu.Lock()
			if !p.over {
				// The caller leaves; its Seq stays pending, so that the
				// server's late reply is read past and dropped. What it
				// owns is let go of.
				p.over, p.reply, p.capture = true, nil, nil
				cc.mu.Unlock()
				return ctxError(ctx)
			}
			cc.mu.Unlock()
			<-p.done // the outcome is in place; take it
		}
	}
	return p.err
}

// errInterrupted says that a request's write was cut short by its
// caller's context: the rest of the request never went, so the connection
// cannot be used again.
var errInterrupted = errors.New("interrupted when its caller's context ended")

// write writes the request, with the send lock held. The codec holds args
// until it returns, so a caller cannot leave before. If ctx ends while the
// codec writes (to a server that stopped reading), a write deadline
// frame.InterruptGrace ahead makes the write return, when the Client knows
// the connection's (deadline); a write that finishes by then is not
// disturbed — a server that reads takes it, and the connection lives on
// under the other callers — and one that was cut short fails, which ends
// the connection.
func (cc *codecClientConn) write(ctx context.Context, req *rpc.Request, args any) error {
	if ctx.Done() == nil || cc.deadline == nil {
		return cc.codec.WriteRequest(req, args)
	}
	cc.wmu.Lock()
	cc.gen++
	gen := cc.gen
	cc.writing, cc.interrupted = true, false
	cc.wmu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		cc.wmu.Lock()
		defer cc.wmu.Unlock()
		if cc.writing && cc.gen == gen { // not a later write's
			cc.interrupted = true
			_ = cc.deadline.SetWriteDeadline(time.Now().Add(frame.InterruptGrace))
		}
	})
	err := cc.codec.WriteRequest(req, args)
	stop()
	cc.wmu.Lock()
	cc.writing = false
	interrupted := cc.interrupted
	if interrupted {
		_ = cc.deadline.SetWriteDeadline(time.Time{})
	}
	cc.wmu.Unlock()
	if err != nil && interrupted {
		return fmt.Errorf("%w: %w", errInterrupted, err)
	}
	return err
}

// lockSend takes the write lock, or gives up when ctx ends or the
// connection does.
func (cc *codecClientConn) lockSend(ctx context.Context) error {
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
	case <-cc.ended.Signal():
		return cc.failure()
	}
}

func (cc *codecClientConn) unlockSend() { <-cc.sending }

// readLoop reads the responses until the codec fails, and hands each to
// its call; then, over a connection the Client dialled, it closes the
// codec, no longer read, once no write is under way (the connection has
// failed: a write ends at once, and none starts).
func (cc *codecClientConn) readLoop() {
	defer cc.done.Set(nil)
	if cc.conn != nil {
		defer func() {
			cc.sending <- struct{}{}
			cc.codec.Close()
			cc.unlockSend()
		}()
	}
	var resp rpc.Response
	for {
		resp = rpc.Response{}
		if err := cc.codec.ReadResponseHeader(&resp); err != nil {
			cc.readFailed(err)
			return
		}
		if err := cc.readOne(&resp); err != nil {
			cc.readFailed(err)
			return
		}
	}
}

// readFailed ends the connection after a failed read.
func (cc *codecClientConn) readFailed(err error) {
	if errors.Is(err, net.ErrClosed) && cc.failure() == nil {
		// The connection was closed here without failing first: a codec
		// closes itself when a write fails (gobrpc's does), and the caller
		// then records the cause with the send lock held. Wait for that,
		// so that the calls get the cause rather than "use of closed
		// network connection"; a write on a closed connection returns at
		// once.
		cc.sending <- struct{}{}
		cc.unlockSend()
	}
	if cc.failure() == nil { // not closed by this end
		cc.log.Warn("dispatch: net/rpc connection failed", "remote", cc.remote, "err", err)
	}
	cc.fail(connFailed(err))
}

// readFailure reports whether err, from reading a body, is the
// connection's failure rather than a body that does not fit the reply. A
// message over the codec's limit is one (gobrpc's matches
// transport.ErrFrameTooLarge): the codec has not read it, so it cannot
// read on, and the call fails as a reply over the frame limit does on
// zerodial's wire.
func readFailure(err error) bool {
	var ne net.Error
	return hungUp(err) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne) || errors.Is(err, transport.ErrFrameTooLarge)
}

// readOne reads the body of resp and delivers the call's outcome; an error
// ends the connection.
func (cc *codecClientConn) readOne(resp *rpc.Response) error {
	cc.mu.Lock()
	p := cc.pending[resp.Seq]
	wanted := p != nil && !p.over && resp.Error == ""
	cc.mu.Unlock()
	if p == nil {
		// Every Seq sent stays pending until its reply comes, even when
		// its caller left: a reply to none is a server out of step.
		return fmt.Errorf("%w: net/rpc response to a call never made or already answered (Seq %d, %q)", transport.ErrProtocol, resp.Seq, resp.ServiceMethod)
	}
	var v reflect.Value
	var err error
	if wanted {
		v = reflect.New(p.typ)
		err = cc.codec.ReadResponseBody(v.Interface())
	} else {
		err = cc.codec.ReadResponseBody(nil) // read past, as net/rpc does
	}
	if err != nil && (!wanted || readFailure(err)) {
		return fmt.Errorf("dispatch: reading the body of %s: %w", resp.ServiceMethod, err)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.pending, resp.Seq)
	if p.over {
		return nil // its caller left, or the connection ended: dropped
	}
	p.over = true
	switch {
	case resp.Error != "":
		p.err = serverError(resp.Error)
	case err != nil:
		// The call succeeded; the reply does not fit the caller's type.
		// As net/rpc, the connection goes on: a codec that lost its place
		// fails on the next header.
		p.err = decodeReplyError(p.name, err)
	default:
		reflect.ValueOf(p.reply).Elem().Set(v.Elem())
	}
	if p.capture != nil {
		p.capture.deliver(nil) // net/rpc carries no metadata
	}
	p.done <- struct{}{}
	return nil
}
