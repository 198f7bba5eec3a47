package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/connwatch"
	"github.com/zerodial/transport/internal/signal"
	"github.com/zerodial/transport/internal/sweep"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("dispatch: server closed")

// Server serves registered methods on any number of listeners, and to
// Clients of this process through the shortcut.
type Server struct {
	opts   serverOptions
	routes atomic.Pointer[routes]
	regMu  sync.Mutex
	gate   *gate

	// The Server's life is three signals, each set once, in this order
	// for a Shutdown:
	//
	//   - closed: Shutdown or Close has begun (set under mu, with the
	//     listeners' closing and the hooks' start); it ends an accept
	//     backoff, and ShuttingDown gives its channel to the handlers.
	//   - drained: the connections close (Shutdown, once the calls in
	//     flight are done or its ctx ended; Close before closed).
	//     While closed is set and drained is not, the Server drains
	//     (isDraining).
	//   - stopped: the Server stops without waiting (Close, or a Shutdown
	//     whose context ended): calls in flight lose their callers.
	closed   signal.Signal
	drained  signal.Signal
	stopped  signal.Signal
	watching watchers // shortcut handler contexts to end when stopped

	mu        sync.Mutex
	listeners map[transport.Listener]struct{}
	conns     map[servedConn]struct{}
	serving   sync.WaitGroup    // Serve loops and connections
	onStop    []func()          // RegisterOnShutdown's, until the Server stops
	hooksRun  []<-chan struct{} // then each started hook's, closed as it returns

	workers workerPool // run connections' reading and shortcut handlers
	// detached keeps the shortcut's detached calls done with, for the next
	// (newDetached).
	detached sync.Pool
	// quiet is the quiet sweep of the Server's connections (server_inline.go,
	// server_hold.go), ended when the Server stops: every QuietAfter while
	// a connection is hurried, every quietSlow while none is.
	quiet sweep.Group
}

// NewServer returns a Server with no methods. Invalid options are reported,
// all at once, by the first Serve or Start.
func NewServer(opts ...ServerOption) *Server {
	o := newServerOptions(opts)
	s := &Server{
		opts:      o,
		gate:      newGate(),
		listeners: make(map[transport.Listener]struct{}),
		conns:     make(map[servedConn]struct{}),
	}
	s.quiet.Slow = quietSlow
	s.routes.Store(&routes{methods: map[string]*method{}, services: map[string]bool{}})
	return s
}

var errShuttingDown = &Error{Code: CodeUnavailable, Message: "dispatch: server is shutting down"}

// isDraining reports whether a Shutdown is waiting for the calls in flight:
// until it closes the connections, a connection still open to the Server
// has new calls answered with CodeUnavailable, and so does a shortcut
// Client that reached the Server before. Never during Close, which sets
// drained before closed; closed is read first, so that a Shutdown seen
// begun and not yet drained is draining still.
func (s *Server) isDraining() bool { return s.closed.IsSet() && !s.drained.IsSet() }

// Serve accepts sockets from l and serves calls on them until l fails or the
// Server is shut down. While it serves, Clients of this process with the
// shortcut on that dial l's address call the Server directly. After Shutdown
// or Close it returns ErrServerClosed; when l is closed by someone else, the
// Accept error.
//
// The shortcut entry is made when Serve starts, so a Client dialling at the
// same moment may open a socket it then does not use. Start makes the entry
// before it returns.
func (s *Server) Serve(l transport.Listener) error {
	stop, err := s.begin(l)
	if err != nil {
		return err
	}
	return s.acceptLoop(l, stop)
}

// Start serves l in the background, as Serve does, after making l's
// shortcut entry: when Start returns, a shortcut Client dialling l's address
// finds the Server. Shutdown or Close stops it; so does l's Close, which is
// logged at Info (WithLogger), as any other Accept failure that ends the
// serving is at Error.
func (s *Server) Start(l transport.Listener) error {
	stop, err := s.begin(l)
	if err != nil {
		return err
	}
	go func() {
		switch err := s.acceptLoop(l, stop); {
		case err == nil, errors.Is(err, ErrServerClosed):
		case errors.Is(err, transport.ErrClosed):
			// Closed by its owner, or, for a listener over one connection
			// (mux.NewServerConn), by the peer hanging up: an ordinary end.
			s.opts.logger.Info("dispatch: listener closed; stopped serving it", "addr", l.Addr())
		default:
			s.opts.logger.Error("dispatch: stopped serving", "addr", l.Addr(), "err", err)
		}
	}()
	return nil
}

// begin records l and its shortcut entry; stop undoes both.
func (s *Server) begin(l transport.Listener) (stop func(), err error) {
	if err := s.opts.problems.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed.IsSet() {
		s.mu.Unlock()
		return nil, ErrServerClosed
	}
	if _, dup := s.listeners[l]; dup {
		s.mu.Unlock()
		return nil, fmt.Errorf("dispatch: already serving the listener at %s", l.Addr())
	}
	s.listeners[l] = struct{}{}
	s.serving.Add(1)
	s.mu.Unlock()
	unregister := shortcuts.add(l, s)
	return func() {
		unregister()
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		s.serving.Done()
	}, nil
}

func (s *Server) acceptLoop(l transport.Listener, stop func()) error {
	defer stop()
	var backoff time.Duration
	wire := wireOf(l)
	for {
		sock, err := l.Accept()
		if err != nil {
			if s.closed.IsSet() {
				return ErrServerClosed
			}
			if errors.Is(err, transport.ErrClosed) {
				return err
			}
			// Anything else — out of file descriptors, say — may pass:
			// back off and accept again rather than stop serving for good.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.opts.logger.Warn("dispatch: accept failed; retrying", "addr", l.Addr(), "err", err, "in", backoff)
			// A Shutdown or Close meanwhile ends the wait, not the next Accept.
			select {
			case <-time.After(backoff):
			case <-s.closed.Signal():
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		if !s.serveSocket(sock, wire) {
			sock.Close()
			return ErrServerClosed
		}
	}
}

// ServeSocket serves calls on one socket until it fails, and returns then.
// Serve calls it for every socket it accepts; it is exported for sockets made
// some other way (a dialled socket serving calls back, say).
func (s *Server) ServeSocket(sock transport.Socket) {
	s.mu.Lock()
	if s.closed.IsSet() {
		s.mu.Unlock()
		sock.Close()
		return
	}
	c := s.track(sock, transport.Wire{})
	s.mu.Unlock()
	s.work(c)
	<-c.done.Signal()
}

// serveSocket starts serving sock, accepted from a listener speaking wire,
// in the background.
func (s *Server) serveSocket(sock transport.Socket, wire transport.Wire) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.IsSet() {
		return false
	}
	s.work(s.track(sock, wire))
	return true
}

// track registers a connection; s.mu is held.
func (s *Server) track(sock transport.Socket, wire transport.Wire) *serverConn {
	c := &serverConn{srv: s, sock: sock, wire: wire, calls: make(map[uint64]*serverCall)}
	c.async, _ = sock.(transport.AsyncSender)
	c.batch, _ = sock.(transport.BatchSender)
	c.unwritten, _ = sock.(interface{ Unwritten() int64 })
	c.written, _ = sock.(interface {
		WaitWritten(ctx context.Context) error
	})
	_, c.inlineOK = sock.(transport.FrameWaiter)
	c.more, _ = sock.(interface{ Buffered() bool })
	if d := s.opts.replyTimeout; d > 0 {
		c.watchdog = connwatch.NewWatchdog(d, c.stalled)
	}
	if d := s.opts.idleTimeout; d > 0 {
		c.idle = connwatch.NewIdle(d, c.busy, c.quiet, c.expireIdle)
	}
	s.addConnLocked(c)
	return c
}

// trackConn registers a connection of another protocol than the zerodial
// wire's; false once the Server is closed.
func (s *Server) trackConn(c servedConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.IsSet() {
		return false
	}
	s.addConnLocked(c)
	return true
}

// addConnLocked adds c to the connections Shutdown and Close reach; s.mu
// is held.
func (s *Server) addConnLocked(c servedConn) {
	s.conns[c] = struct{}{}
	s.serving.Add(1)
}

// untrack removes a connection that is finished.
func (s *Server) untrack(c servedConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.serving.Done()
}

// Shutdown stops the Server gracefully: it closes the listeners at once,
// turns new calls away with CodeUnavailable — on connections still open and
// from shortcut Clients that reached the Server alike — waits for the calls
// and streams in flight to finish or for ctx to end, and then closes every
// connection (a later call then meets a closed listener, on every path).
// Each connection's peer is told at once that the Server is draining
// (WIRE.md, Drain), and the connection is closed only once the answers
// are written (a stream's end too, though queued behind another write)
// and the peer has promised to send no new call (or after
// DrainAckTimeout), so that no call is lost in a closing connection: each
// is answered or refused, which a Client of replicas retries elsewhere.
//
// The functions given to RegisterOnShutdown are started as Shutdown
// begins, and Shutdown returns only once they have returned too: a
// registration they withdraw is gone when Shutdown returns, even with
// nothing in flight, so a process may exit then. It returns ctx.Err() if
// ctx ended first — before the calls in flight finished (which are then
// cut off, as by Close) or before the hooks returned (which go on, on
// their goroutines; Shutdown does not wait for them any longer).
//
// A handler learns that Shutdown has begun from ShuttingDown(ctx): a
// stream that would run until its caller leaves (a subscription, a watch)
// should end then, or Shutdown waits for it until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAccepting()
	acks := s.notifyDrain()
	err := s.gate.wait(ctx)
	if err == nil {
		err = waitAll(ctx, acks)
	}
	if err == nil {
		// The last answers may still be queued on their sockets.
		err = s.flushConns(ctx)
	}
	if err != nil {
		s.stop()
	}
	s.drained.Set(ErrServerClosed) // as the connections close
	s.closeConns()
	if err == nil {
		s.serving.Wait()
		s.stopWorkers()
	} else {
		// Calls still running end with their handlers; idle workers end now.
		s.workers.stop()
	}
	s.quiet.End()
	// A hook registered while Shutdown waits (by another hook, say) starts
	// at once: wait until a look at the hooks finds none that is new.
	for waited := 0; err == nil; {
		hooks := s.startedHooks()
		if len(hooks) == waited {
			break
		}
		err = waitAll(ctx, hooks[waited:])
		waited = len(hooks)
	}
	return err
}

// ShuttingDown returns a channel that is closed when the Server serving
// the call of ctx — a handler's context, or one derived from it — begins
// to stop (Shutdown or Close), for a handler to end what it would
// otherwise go on with until its caller leaves: a stream of updates, a
// long poll. Outside a handler it returns nil, which never closes, as
// context.Background().Done() does. It is the same on every path.
//
// Shutdown does not cancel a handler's context (calls in flight may finish
// their work: that is the graceful promise), and it waits for every call
// and stream in flight; so a handler that streams until told should
// select on this channel and return. Returning nil ends the stream cleanly
// (the caller's Recv range ends without an error, as after any handler
// that succeeds); returning an *Error with CodeUnavailable tells the
// caller that it may open the stream again elsewhere. Close ends the
// handlers' contexts too.
func ShuttingDown(ctx context.Context) <-chan struct{} {
	if s, ok := ctx.Value(serverKey{}).(*Server); ok && s != nil {
		return s.closed.Signal()
	}
	return nil
}

// serverKey is the context key under which a handler's context gives its
// Server, for ShuttingDown.
type serverKey struct{}

// DrainAckTimeout bounds how long Shutdown waits, once the calls in flight
// are done, for each connection's peer to acknowledge the Drain notice
// (WIRE.md) — the promise that it sends no new call, after which closing
// the connection cannot lose one. A peer that does not know the notice
// costs Shutdown this long at most.
const DrainAckTimeout = time.Second

// notifyDrain tells every connection's peer that the Server is draining,
// and returns what to wait for: a channel per connection (servedConn's
// drain).
func (s *Server) notifyDrain() []<-chan struct{} {
	cs := s.connList()
	acks := make([]<-chan struct{}, 0, len(cs))
	for _, c := range cs {
		acks = append(acks, c.drain())
	}
	return acks
}

// waitAll waits for every channel to close, or for ctx to end.
func waitAll(ctx context.Context, chs []<-chan struct{}) error {
	for _, ch := range chs {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stopWorkers ends the idle workers and waits for them; a worker still
// running a call ends when the call does.
func (s *Server) stopWorkers() {
	s.workers.stop()
	s.workers.wait()
}

// Close stops the Server at once: listeners and connections are closed and
// calls in flight get no reply (their callers see the connection fail).
// It starts the functions given to RegisterOnShutdown, as Shutdown does
// (a registration is withdrawn however the Server stops), but does not
// wait for them: a hook that blocks does not hold Close up. A Shutdown
// called after Close waits for them, bounded by its ctx.
func (s *Server) Close() error {
	s.drained.Set(ErrServerClosed) // before closed: Close never drains
	s.stopAccepting()
	s.stop()
	s.closeConns()
	s.serving.Wait()
	s.workers.stop()
	s.quiet.End()
	return nil
}

// stop fails the calls in flight on the shortcut, as closing the
// connections fails those on the network.
func (s *Server) stop() {
	s.stopped.Set(ErrServerClosed)
	s.watching.cancelAll()
}

func (s *Server) watch(c *shortcutCtx)   { s.watching.add(c) }
func (s *Server) unwatch(c *shortcutCtx) { s.watching.remove(c) }

// RegisterOnShutdown registers f to be called, on a goroutine of its own,
// when Shutdown or Close begins (once new calls are refused), as net/http's
// Server does: a registration
// with a service registry (an etcd lease, say) can be withdrawn there, so
// that callers stop choosing this Server while it drains. Shutdown returns
// only once every f has returned, or when its ctx ends: f should be
// bounded by a deadline of its own, for a hook that never returns keeps
// its goroutine for good, and f must not wait for Shutdown itself. Close
// starts f and does not wait for it. Registered after the Server has begun
// to stop, f is called at once, and a Shutdown still under way, or a later
// one, waits for it too.
func (s *Server) RegisterOnShutdown(f func()) {
	s.mu.Lock()
	if !s.closed.IsSet() {
		s.onStop = append(s.onStop, f)
		s.mu.Unlock()
		return
	}
	run := s.trackHooksLocked([]func(){f})
	s.mu.Unlock()
	run()
}

// trackHooksLocked records hooks as started and returns what starts them;
// s.mu is held.
func (s *Server) trackHooksLocked(hooks []func()) (run func()) {
	dones := make([]chan struct{}, len(hooks))
	for i := range dones {
		dones[i] = make(chan struct{})
		s.hooksRun = append(s.hooksRun, dones[i])
	}
	return func() {
		for i, f := range hooks {
			go func() {
				defer close(dones[i])
				f()
			}()
		}
	}
}

// startedHooks returns the done channels of the hooks started so far, in
// the order they started (the list only grows).
func (s *Server) startedHooks() []<-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hooksRun)
}

func (s *Server) stopAccepting() {
	s.mu.Lock()
	run := func() {}
	if s.closed.Set(ErrServerClosed) {
		run = s.trackHooksLocked(s.onStop)
		s.onStop = nil
	}
	ls := make([]transport.Listener, 0, len(s.listeners))
	for l := range s.listeners {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	// The gate first: a hook that sees Shutdown begun may count on new
	// calls being refused (a call admitted before is in flight, and
	// Shutdown waits for it).
	s.gate.close()
	run()
	for _, l := range ls {
		l.Close()
	}
}

// flushConns waits until every connection has written what it queued
// (serverConn.flushed), or ctx ends.
func (s *Server) flushConns(ctx context.Context) error {
	for _, c := range s.connList() {
		if err := c.flushed(ctx); err != nil {
			return err
		}
	}
	return nil
}

// connList returns the connections being served now.
func (s *Server) connList() []servedConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := make([]servedConn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	return cs
}

func (s *Server) closeConns() {
	for _, c := range s.connList() {
		c.close()
	}
}
