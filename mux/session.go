package mux

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/hashicorp/yamux"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/netconn"
	"github.com/zerodial/transport/internal/preface"
	"github.com/zerodial/transport/internal/unixsock"
)

// clientSession is the session kept for one remote address, from the first
// connection attempt until it closes.
type clientSession struct {
	t    *Transport
	addr string
	tr   *tracker
	// slots holds a token per stream this end's Dials opened, and inSlots
	// one per stream the peer opened that was handed to Incoming, when the
	// stream limit is set. They are apart so that a peer opening streams
	// back can never make this end's Dials wait, nor the other way round;
	// inSlots bounds what the peer can make this end hold, as a listener's
	// slots do.
	slots, inSlots chan struct{}

	// ready is closed when the connection attempt ends; sess or err is set
	// before.
	ready  chan struct{}
	cancel context.CancelFunc
	sess   *yamux.Session
	err    error

	// Guarded by t.mu.
	waiters int // Dials waiting for ready
	// live counts the streams handed out, dialled or opened by the peer,
	// and not yet closed: the session must outlive every one of them.
	live    int
	retired bool // no longer in t.current: closed once live reaches 0
}

// session returns the usable session for addr, starting a connection if
// there is none, and waits for it within ctx.
func (t *Transport) session(ctx context.Context, addr string) (*clientSession, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("mux: dial %s: transport closed: %w", addr, transport.ErrClosed)
	}
	cs := t.current[addr]
	var dead *clientSession
	if cs != nil && cs.isDead() {
		if t.retireLocked(cs) {
			dead = cs
		}
		cs = nil
	}
	if cs == nil {
		cs = t.startSession(addr)
	}
	cs.waiters++
	t.mu.Unlock()
	if dead != nil {
		dead.close()
	}

	select {
	case <-cs.ready:
	case <-ctx.Done():
	}
	t.mu.Lock()
	cs.waiters--
	ready := isDone(cs.ready)
	if !ready && cs.waiters == 0 {
		// Nobody waits for this attempt any more: stop it, and let the
		// next Dial start afresh rather than inherit a cancelled one.
		cs.cancel()
		if t.current[addr] == cs {
			delete(t.current, addr)
		}
	}
	t.mu.Unlock()
	if !ready {
		return nil, dialCtxErr(addr, ctx.Err())
	}
	if cs.err != nil {
		return nil, cs.err
	}
	return cs, nil
}

// startSession registers a new session for addr and starts connecting it.
// It runs with t.mu held and t open.
func (t *Transport) startSession(addr string) *clientSession {
	ctx, cancel := context.WithCancel(t.ctx)
	cs := t.newClientSession(addr, cancel)
	t.current[addr] = cs
	// The attempt runs on its own goroutine, not the first caller's, so
	// that every caller waiting for it can leave when its ctx ends.
	t.wg.Go(func() { cs.run(ctx) })
	return cs
}

// newClientSession returns a session for addr, not yet connected, whose
// connection attempt cancel stops.
func (t *Transport) newClientSession(addr string, cancel context.CancelFunc) *clientSession {
	cs := &clientSession{
		t:      t,
		addr:   addr,
		tr:     newTracker(),
		ready:  make(chan struct{}),
		cancel: cancel,
	}
	if n := t.cfg.streamLimit; n > 0 {
		cs.slots = make(chan struct{}, n)
		cs.inSlots = make(chan struct{}, n)
	}
	return cs
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// isDead reports whether the session was set up and has since closed.
func (cs *clientSession) isDead() bool {
	return isDone(cs.ready) && cs.err == nil && cs.sess.IsClosed()
}

// run connects the session, then takes the streams the peer opens on it
// (acceptStreams) until it closes, and forgets it.
func (cs *clientSession) run(ctx context.Context) {
	defer cs.cancel()
	t := cs.t
	sess, err := cs.connect(ctx)
	t.mu.Lock()
	switch {
	case err != nil:
	case t.closed:
		err = fmt.Errorf("mux: dial %s: transport closed: %w", cs.addr, transport.ErrClosed)
	case ctx.Err() != nil:
		err = dialCtxErr(cs.addr, ctx.Err()) // every caller left
	}
	if err != nil {
		if t.current[cs.addr] == cs {
			delete(t.current, cs.addr)
		}
		cs.err = err
		close(cs.ready)
		t.mu.Unlock()
		if sess != nil {
			sess.Close()
		}
		return
	}
	cs.sess = sess
	t.all[cs] = struct{}{}
	close(cs.ready)
	t.mu.Unlock()

	cs.acceptStreams()
	<-sess.CloseChan()
	t.mu.Lock()
	delete(t.all, cs)
	if t.current[cs.addr] == cs {
		delete(t.current, cs.addr)
	}
	t.mu.Unlock()
	t.cfg.Logger.Debug("mux: session closed", "side", "client", "remote", cs.addr)
}

// connect dials the connection, completes TLS when configured, exchanges
// prefaces with the listener (WIRE.md), and starts the yamux client on it.
func (cs *clientSession) connect(ctx context.Context) (*yamux.Session, error) {
	t := cs.t
	c, err := netconn.Dial(ctx, unixsock.DialFunc(t.cfg.dial), cs.addr)
	if err != nil {
		return nil, fmt.Errorf("mux: dial %s: %w", cs.addr, err)
	}
	// The preface goes on the connection itself, before the tap, which
	// must see yamux's bytes only (track.go).
	c, peer, err := t.setup.Client(ctx, c, cs.addr)
	if err != nil {
		return nil, err
	}
	return cs.start(c, peer)
}

// start runs the yamux client over c, which is set up, through the
// session's tap; peer is the preface the listener sent. On failure c is
// closed.
func (cs *clientSession) start(c net.Conn, peer preface.Preface) (*yamux.Session, error) {
	cs.tr.comp = netconn.Compression(cs.t.cfg.CompressionThreshold, peer)
	log := newSessionLogger(cs.t.cfg.Logger, "client", cs.addr)
	sess, err := yamux.Client(newTapConn(c, cs.tr), cs.t.cfg.sessionConfig(log))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("mux: session with %s: %w", cs.addr, err)
	}
	return sess, nil
}

// open opens a stream, within ctx. A *retireError means the session can
// take no more streams.
func (cs *clientSession) open(ctx context.Context) (*streamConn, error) {
	if cs.sess.IsClosed() || cs.tr.isDead() {
		return nil, &retireError{yamux.ErrSessionShutdown}
	}
	if cs.slots != nil {
		select {
		case cs.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-cs.sess.CloseChan():
			return nil, &retireError{yamux.ErrSessionShutdown}
		}
	}
	st, err := openStream(ctx, cs.sess, cs.t.goTracked)
	if err != nil {
		cs.releaseSlot()
		// A connection that failed to take the stream's opening frame
		// ends the session, but yamux reports the write's own error, and
		// reports it before the session is shut down; the tracker knows
		// already (tapConn.Write).
		if retireErr(err) || cs.tr.isDead() {
			err = &retireError{err}
		}
		return nil, err
	}
	t := cs.t
	t.mu.Lock()
	if cs.sess.IsClosed() || cs.tr.isDead() {
		// Died while the stream was opened: the caller must not get it.
		t.mu.Unlock()
		st.Close()
		cs.releaseSlot()
		return nil, &retireError{yamux.ErrSessionShutdown}
	}
	cs.live++
	t.mu.Unlock()
	return newStreamConn(st, cs, cs.tr), nil
}

// openStream calls sess.OpenStream, which waits without a context when the
// peer's accept backlog is full; a ctx that can end runs it on a goroutine
// started by spawn and leaves it to close the stream if ctx ends first.
// spawn reports false, and starts nothing, when its owner is closed.
func openStream(ctx context.Context, sess *yamux.Session, spawn func(func()) bool) (*yamux.Stream, error) {
	if ctx.Done() == nil {
		return sess.OpenStream()
	}
	type result struct {
		st  *yamux.Stream
		err error
	}
	var (
		mu        sync.Mutex
		abandoned bool
		ch        = make(chan result, 1)
	)
	started := spawn(func() {
		st, err := sess.OpenStream()
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if st != nil {
				st.Close()
			}
			return
		}
		ch <- result{st, err}
	})
	if !started {
		return nil, fmt.Errorf("mux: transport closed: %w", transport.ErrClosed)
	}
	select {
	case r := <-ch:
		return r.st, r.err
	case <-ctx.Done():
		mu.Lock()
		abandoned = true
		mu.Unlock()
		select {
		case r := <-ch: // delivered just before
			if r.st != nil {
				r.st.Close()
			}
		default:
		}
		return nil, ctx.Err()
	}
}

func (cs *clientSession) releaseSlot() {
	if cs.slots != nil {
		<-cs.slots
	}
}

// streamClosed is called once per stream Dial handed out, when it is
// closed.
func (cs *clientSession) streamClosed() { cs.release(cs.slots) }

// release undoes the accounting of one stream: its count in live and, if
// slots is not nil, its token there. A retired session is closed with its
// last stream.
func (cs *clientSession) release(slots chan struct{}) {
	t := cs.t
	t.mu.Lock()
	cs.live--
	closeNow := cs.retired && cs.live == 0
	t.mu.Unlock()
	if slots != nil {
		<-slots
	}
	if closeNow {
		cs.close()
	}
}

// close closes the session, telling its streams first (tracker.markDead).
func (cs *clientSession) close() {
	cs.tr.markDead(nil)
	cs.sess.Close()
}

// closeHere closes the session for Transport.Close: its streams' Send and
// Recv then fail with an error matching transport.ErrClosed as well as
// ErrSessionClosed (sessionClosedHere), unless the session had died
// already.
func (cs *clientSession) closeHere() {
	cs.tr.markDead(errClosedHere)
	cs.sess.Close()
}

// retire takes cs out of use for new streams and closes it once its
// streams are closed.
func (t *Transport) retire(cs *clientSession) {
	t.mu.Lock()
	closeNow := t.retireLocked(cs)
	t.mu.Unlock()
	if closeNow {
		cs.close()
	}
}

// retireLocked does retire's bookkeeping with t.mu held and reports whether
// the session should be closed now.
func (t *Transport) retireLocked(cs *clientSession) bool {
	if t.current[cs.addr] == cs {
		delete(t.current, cs.addr)
	}
	if cs.retired {
		return false
	}
	cs.retired = true
	return cs.live == 0
}
