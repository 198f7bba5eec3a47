package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/rpcwire"
	"github.com/zerodial/transport/internal/sweep"
)

// clientQuietAfter is how long a client connection whose calls come one
// after another stays read by no goroutine once its last caller has read
// its reply, before the quiet sweep gives the watcher the reading back:
// the period of a Client's sweep (newClientSweep). Only what the server
// sends unasked waits on it — a Drain notice, which a graceful Shutdown
// waits for (a second at most: DrainAckTimeout), and the connection's end
// — so it is long: a sweep that ticks every millisecond wakes a goroutine
// as often, and while calls flow between two processes on one host that
// wake cost more than the calls (BenchmarkUnary's zerodial-tcp-unix-proc
// row, one set of interleaved runs: 61 µs a call with a 1 ms tick at both
// ends, 46 µs with this one at the Client's end alone; 10 and 20 ms cost
// 10 to 16% more than this). A connection used seldom is read at once
// (leaveIdle).
const clientQuietAfter = 100 * time.Millisecond

// newClientSweep returns the quiet sweep of a Client's connections.
func newClientSweep() *sweep.Group { return &sweep.Group{Every: clientQuietAfter} }

// readRole decides who reads a client connection's socket: its watcher
// goroutine (readLoop), or the caller whose reply is due.
//
// A goroutine that reads replies for callers must wake the caller of each
// one, and on more than one core that wake — of a goroutine on the other
// core — costs more than a round trip on loopback (floor-tcp-relay in
// bench/). So while calls come one at a time the caller reads its own
// reply: the watcher parks whenever nothing is pending, and a caller that
// finds nobody reading reads until its reply has come. The watcher reads
// whenever a call or stream waits on a reader other than its own caller;
// and on a connection quiet for clientQuietAfter, the quiet sweep resumes
// it, to see what the server sends unasked (a Drain notice; the end of the
// connection). Only over a transport.FrameWaiter, whose wait a caller's
// context can end between messages. It serves BenchmarkUnary's network
// rows.
type readRole struct {
	mu     sync.Mutex
	cond   sync.Cond // signalled when the watcher may read, or must go
	who    reader
	halted bool // the connection has failed: the watcher goes
	// waiting says a caller reading is waiting for a message to begin,
	// where its context may interrupt it; interrupted, that it did.
	// waitGen numbers the callers' readings, so that an interruption whose
	// function ran late never reaches the next caller's.
	waiting, interrupted bool
	waitGen              uint64
	// lastUse is when the connection last went idle, its last caller
	// done reading or its watcher parked (UnixNano; 0 before its first
	// use, which leaveIdle takes for a long quiet).
	lastUse int64
	// swept says the quiet sweep holds the connection, so that parking
	// it again costs no visit to the sweep's lock.
	swept bool
}

type reader uint8

const (
	readByWatcher reader = iota
	readByCaller
	readByNobody
)

// watch waits until the watcher is to read; false when it must go.
func (r *readRole) watch() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.who != readByWatcher && !r.halted {
		r.cond.Wait()
	}
	return !r.halted
}

// halt makes the watcher go: the connection has failed.
func (cc *clientConn) haltReading() {
	r := &cc.role
	r.mu.Lock()
	r.halted = true
	r.cond.Broadcast()
	r.mu.Unlock()
	cc.quiet.Remove(cc)
}

// idle reports whether nothing waits on the connection's reader: no call
// (one whose caller gave up included, whose reply may still come) and no
// stream.
func (cc *clientConn) idle() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.pending) == 0 && len(cc.streams) == 0
}

// parkWatcher stops the watcher, after a message, when nothing waits.
func (cc *clientConn) parkWatcher() {
	r := &cc.role
	r.mu.Lock()
	add := false
	if !r.halted && cc.idle() {
		add = cc.leaveIdle(time.Now().UnixNano())
	}
	r.mu.Unlock()
	if add {
		cc.sweepQuiet()
	}
}

// leaveIdle decides who reads a connection just left with nothing
// waiting, with r.mu held, and reports whether the quiet sweep must watch
// it. A connection that had been quiet for clientQuietAfter before this
// use (a call now and then; a stream, or a call, that has ended after a
// long while) is read by its watcher at once: the next call pays a
// goroutine's wake, and what the server sends unasked is read at once — a
// Drain notice above all, which a graceful Shutdown waits for. One whose
// calls come one after another is read by nobody, until the next caller
// or the quiet sweep, after clientQuietAfter.
func (cc *clientConn) leaveIdle(now int64) (add bool) {
	r := &cc.role
	seldom := now-r.lastUse >= int64(clientQuietAfter)
	r.lastUse = now
	if seldom {
		r.who = readByWatcher
		r.cond.Broadcast()
		return false
	}
	r.who = readByNobody
	add, r.swept = !r.swept, true
	return add
}

// takeRead makes the caller the reader if nobody reads.
func (cc *clientConn) takeRead() bool {
	if cc.waiter == nil {
		return false
	}
	r := &cc.role
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.who != readByNobody || r.halted {
		return false
	}
	r.who = readByCaller
	r.waitGen++ // every caller's reading, its context able to end or not
	return true
}

// needReader makes the watcher read if nobody does: something now waits
// on the reader that will not read itself (a stream).
func (cc *clientConn) needReader() {
	r := &cc.role
	r.mu.Lock()
	if r.who == readByNobody {
		r.who = readByWatcher
		r.cond.Broadcast()
	}
	r.mu.Unlock()
}

// releaseRead ends a caller's reading: the watcher reads on if something
// waits, else as leaveIdle says.
func (cc *clientConn) releaseRead() {
	r := &cc.role
	r.mu.Lock()
	add := false
	if cc.idle() {
		add = cc.leaveIdle(time.Now().UnixNano())
	} else {
		r.who = readByWatcher
		r.cond.Broadcast()
	}
	r.mu.Unlock()
	if add {
		cc.sweepQuiet()
	}
}

// sweepQuiet has the quiet sweep watch cc, which has just been left with
// no reader. It is added outside r.mu (the sweep visits cc under its own
// lock, and takes r.mu), so a halt may have removed it just before: it
// takes itself out again then, since a sweep left holding a connection
// that has ended would tick on for nothing — and in a testing/synctest
// bubble, whose time stops when its function returns, never end.
func (cc *clientConn) sweepQuiet() {
	cc.quiet.Add(cc)
	r := &cc.role
	r.mu.Lock()
	halted := r.halted
	r.mu.Unlock()
	if halted {
		cc.quiet.Remove(cc)
	}
}

// resumeIfQuiet gives the watcher back the reading once the connection has
// been quiet for clientQuietAfter; it reports whether the quiet sweep is
// done with cc.
func (cc *clientConn) resumeIfQuiet(now int64) bool {
	r := &cc.role
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.halted && r.who == readByNobody && now-r.lastUse < int64(clientQuietAfter) {
		return false
	}
	if !r.halted && r.who == readByNobody {
		r.who = readByWatcher
		r.cond.Broadcast()
	}
	r.swept = false // parked again, it is added again
	return true
}

// readOwn reads messages on the caller's goroutine until p is answered,
// ctx ends or the connection fails; then it hands the reading on.
func (cc *clientConn) readOwn(ctx context.Context, p *pending) {
	var stop func() bool
	if ctx.Done() != nil {
		r := &cc.role
		r.mu.Lock()
		gen := r.waitGen // takeRead's, for this reading
		r.mu.Unlock()
		stop = context.AfterFunc(ctx, func() { cc.interruptRead(gen) })
	}
	for len(p.done) == 0 && ctx.Err() == nil {
		if !cc.waitMessage() || !cc.readOne(&cc.rmsg) {
			break
		}
	}
	if stop != nil {
		stop()
	}
	cc.releaseRead()
}

// waitMessage waits for the next message to begin, where the caller's
// context may end the wait; false when it did, or when the connection
// failed.
func (cc *clientConn) waitMessage() bool {
	r := &cc.role
	r.mu.Lock()
	r.waiting = true
	r.mu.Unlock()
	err := cc.waiter.WaitFrame()
	r.mu.Lock()
	r.waiting = false
	interrupted := r.interrupted
	if interrupted {
		r.interrupted = false
		_ = cc.sock.SetReadDeadline(time.Time{})
	}
	r.mu.Unlock()
	if err == nil {
		return true
	}
	if interrupted && errors.Is(err, transport.ErrTimeout) {
		return false // the socket is as it was
	}
	cc.recvFailed(err)
	return false
}

// interruptRead ends a caller's wait for a message when its context ends:
// the wait of the reading gen, not a later one's.
func (cc *clientConn) interruptRead(gen uint64) {
	r := &cc.role
	r.mu.Lock()
	if r.waiting && r.waitGen == gen {
		r.interrupted = true
		_ = cc.sock.SetReadDeadline(longAgo)
	}
	r.mu.Unlock()
}

// Sweep is the quiet sweep's visit (internal/sweep): the watcher gets
// the reading back once the connection has been quiet for
// clientQuietAfter.
func (cc *clientConn) Sweep(now int64) bool { return cc.resumeIfQuiet(now) }

func (cc *clientConn) readLoop() {
	defer cc.done.Set(nil)
	for cc.role.watch() {
		if !cc.readOne(&cc.rmsg) {
			return
		}
		if cc.waiter != nil {
			cc.parkWatcher()
		}
	}
}

// recvFailed ends the connection after a failed read.
func (cc *clientConn) recvFailed(err error) {
	if errors.Is(err, transport.ErrClosed) && !cc.failed() {
		// The socket was closed here without the connection
		// failing first: a Send that failed part way closes its
		// socket itself (the Socket contract), and its caller then
		// records the cause while it still holds the send lock.
		// Wait for that, so that the calls get the cause rather
		// than "use of closed socket". Sends on a closed socket
		// return at once, so the wait is short.
		cc.sending <- struct{}{}
		cc.unlockSend()
	}
	if !cc.failed() { // not closed by this end
		if cc.serverDraining.Load() && hungUp(err) {
			// The server said it was shutting down, and then closed
			// the connection: the end it announced, not a failure.
			cc.log.Debug("dispatch: connection closed by the server after its Drain notice", "remote", cc.sock.RemoteAddr(), "err", err)
		} else {
			cc.log.Warn("dispatch: connection failed", "remote", cc.sock.RemoteAddr(), "err", err)
		}
	}
	cc.fail(connFailed(err))
	cc.sock.Close() // the peer is gone; free what the socket holds
}

// readOne reads one message and hands it to whom it is for; false when
// the connection has ended.
func (cc *clientConn) readOne(m *transport.Message) bool {
	if err := cc.sock.Recv(m); err != nil {
		cc.recvFailed(err)
		return false
	}
	rh := readHeader(m.Header)
	if rh.has(rpcwire.Drain) {
		cc.drain()
		shed(m)
		return true
	}
	seq, err := rh.parseSeq()
	if err != nil {
		cc.log.Warn("dispatch: closing connection: reply without a valid Seq", "remote", cc.sock.RemoteAddr(), "err", err)
		cc.fail(connFailed(fmt.Errorf("%w: reply without a valid Seq: %w", transport.ErrProtocol, err)))
		cc.sock.Close()
		return false
	}
	cc.mu.Lock()
	if s := cc.streams[seq]; s != nil {
		cc.mu.Unlock()
		if err := cc.streamFrame(s, m); err != nil {
			cc.log.Warn("dispatch: closing connection: bad stream frame", "remote", cc.sock.RemoteAddr(), "seq", seq, "err", err)
			cc.fail(connFailed(fmt.Errorf("%w: bad stream frame: %w", transport.ErrProtocol, err)))
			cc.sock.Close()
			return false
		}
		shed(m)
		return true
	}
	if rh.has(rpcwire.Stream) {
		// A frame of a stream that has ended (a grant that crossed
		// its end): never a call's reply, whose Seq may be reused.
		cc.mu.Unlock()
		return true
	}
	p, ok := cc.pending[seq]
	if ok {
		delete(cc.pending, seq)
		if p != abandoned {
			// An abandoned number is never reused: a server that does
			// not know Cancel (net/rpc's) answers the Cancel message
			// too, so a second reply to it may still come.
			cc.free = append(cc.free, seq)
		}
	}
	cc.mu.Unlock()
	if p == nil || p == abandoned {
		return true // a reply to a call whose caller gave up, or to none
	}
	if msg, failed := rh.get(rpcwire.Error); failed {
		p.err = wireError(m.Header, msg)
	} else {
		p.err = decodeReply(cc.codec, p.name, m.Body, p.reply)
	}
	if p.capture != nil {
		p.capture.deliver(rh.metadata())
	}
	shed(m)
	p.done <- struct{}{}
	return true
}
