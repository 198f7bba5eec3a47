package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/signal"
	"github.com/zerodial/transport/internal/sweep"
)

// Client calls the methods of one address. It is safe for concurrent use:
// many calls share one socket, matched by sequence number.
type Client struct {
	// dialer makes the Client's connections; nil for a Client that was
	// given its connection (NewClient) and never dials.
	dialer connDialer
	addr   string
	key    regKey
	wire   transport.Wire // what the dialer speaks, for the shortcut's check
	opts   clientOptions
	ctype  string // the codec's name
	limit  int    // the dialer's frame limit, for the shortcut's copy mode
	// netPath and remote are the Path and RemoteAddr of the Client's
	// network calls, for CallInfo.
	netPath Path
	remote  net.Addr

	mu      sync.Mutex
	conn    callConn // nil until needed, and after it fails
	dialing *dialing // a Dial under way, which other callers wait for
	// closed is set by Close, under mu, so that what is read under mu
	// (conn, dialing) agrees with it; hot paths read it without the lock.
	closed signal.Signal
	found  atomic.Pointer[found]
	// reached is the Server the shortcut last reached: while it drains, the
	// Client is answered as a connection open to it would be, even though
	// its listener, and so its shortcut entry, is gone.
	reached  atomic.Pointer[Server]
	watching watchers // shortcut handler contexts to end on Close
	// set is the replicas of a Client made with WithResolver, each a
	// Client of one address; nil for a Client of one address.
	set *replicaSet
	// quiet is the quiet sweep of the connections the Client makes, its
	// replicas' included, ended by Close; nil for a replica's Client,
	// whose connections are its set's Client's to sweep.
	quiet *sweep.Group
	// methods remembers the methods the shortcut found, by the length of
	// their names, to skip the router's map on a repeated call. Methods are
	// never unregistered, so an entry stays right while its Server does.
	methods [8]atomic.Pointer[method]
}

// method returns srv's method called name, through the cache.
func (c *Client) method(srv *Server, name string) (*method, *Error) {
	slot := &c.methods[len(name)%len(c.methods)]
	if m := slot.Load(); m != nil && m.srv == srv && m.name == name {
		return m, nil
	}
	m, e := srv.lookup(name)
	if m != nil {
		slot.Store(m)
	}
	return m, e
}

// dialing is a Dial in progress. done is set when it is over, with its
// error (nil: conn is the connection). cancel ends the Dial: Close calls
// it, so that a Dial under way ends when the Client closes.
type dialing struct {
	done   signal.Signal
	cancel context.CancelFunc
	conn   callConn
}

func (c *Client) watch(x *shortcutCtx)   { c.watching.add(x) }
func (c *Client) unwatch(x *shortcutCtx) { c.watching.remove(x) }

// Dial returns a Client of the service at addr over tr. With WithShortcut,
// when a Server of this process serves addr, no socket is opened; otherwise
// Dial connects now, so that an address nobody serves fails here, as with
// net/rpc. A connection that fails later is dialled again by the next call.
// A target of a resolver ("static:///a:1,b:2", "dns:///name:port") is
// dialled only with WithResolver; without it, Dial refuses it and says so.
func Dial(ctx context.Context, tr transport.Transport, addr string, opts ...ClientOption) (*Client, error) {
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	if tr == nil {
		return nil, errors.New("dispatch: Dial with a nil Transport")
	}
	o, err := newClientOptions(opts)
	if err != nil {
		return nil, err
	}
	d := &transportDialer{tr: tr, codec: o.codec, log: o.logger, quiet: sweep.Group{Every: clientQuietAfter}}
	if o.replicas.resolver != nil {
		c, err := dialReplicas(ctx, d, addr, o)
		if c != nil {
			c.quiet = &d.quiet
		}
		return c, err
	}
	if err := targetError("Dial", addr); err != nil {
		return nil, err
	}
	c := newAddrClient(d, addr, o, nil)
	c.quiet = &d.quiet
	if o.shortcut != ShortcutOff && shortcuts.lookup(c.key, c.wire) != nil {
		return c, nil
	}
	if _, err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// newAddrClient returns a Client of addr, dialled by d, that has not
// dialled yet. set, when not nil, makes it the Client of the replicas set
// holds: it has no shortcut of its own (each replica's Client has), so no
// key.
func newAddrClient(d connDialer, addr string, o clientOptions, set *replicaSet) *Client {
	c := &Client{dialer: d, addr: addr, opts: o, ctype: o.codec.Name(), limit: d.maxFrame(),
		netPath: d.path(), remote: dialAddr{d.String(), addr}, set: set}
	if set == nil {
		if k, w, ok := d.shortcut(addr); ok {
			c.key, c.wire = k, w
		}
	}
	return c
}

// NewClient returns a Client that calls over sock, a Socket made some other
// way: accepted from a Listener (a server calling back the peer that dialled
// it, which serves on its end with Server.ServeSocket), or made by
// tcp.NewSocket over a connection the program already has. The Client owns
// sock, and Close closes it. It has no address to dial again: once sock
// fails, its calls fail with ErrShutdown. WithShortcut has no effect on it.
// The error joins every invalid option.
func NewClient(sock transport.Socket, opts ...ClientOption) (*Client, error) {
	o, err := newClientOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.replicas.resolver != nil {
		return nil, errors.New("dispatch: NewClient with WithResolver: a Socket has one peer; use Dial")
	}
	o.shortcut = ShortcutOff
	c := &Client{addr: sock.RemoteAddr().String(), opts: o, ctype: o.codec.Name(), limit: transport.DefaultMaxFrameSize,
		netPath: pathOfWire(transport.Wire{}, sock), remote: sock.RemoteAddr()}
	c.quiet = newClientSweep()
	c.conn = newClientConn(sock, c.netPath, o.codec, o.logger, c.quiet)
	return c, nil
}

// connect returns the live connection, dialling one if there is none. One
// caller dials; the others wait for it, each no longer than its own context
// allows, and none holds a lock meanwhile. Close ends a Dial under way.
func (c *Client) connect(ctx context.Context) (callConn, error) {
	for {
		c.mu.Lock()
		if c.closed.IsSet() {
			c.mu.Unlock()
			return nil, ErrShutdown
		}
		if c.conn != nil && c.conn.failure() == nil {
			conn := c.conn
			c.mu.Unlock()
			return conn, nil
		}
		if c.dialer == nil { // NewClient's: nothing to dial
			err := c.conn.failure()
			c.mu.Unlock()
			return nil, err
		}
		d := c.dialing
		if d == nil {
			dctx, cancel := context.WithCancel(ctx)
			d = &dialing{cancel: cancel}
			c.dialing = d
			c.mu.Unlock()
			return c.dial(dctx, d)
		}
		c.mu.Unlock()
		select {
		case <-d.done.Signal():
			err := d.done.Err()
			if err == nil {
				return d.conn, nil
			}
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			// The dialler's own context ended its Dial: try again with ours.
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dial makes the connection d stands for, within ctx, which d.cancel ends.
func (c *Client) dial(ctx context.Context, d *dialing) (callConn, error) {
	conn, err := c.dialer.dial(ctx, c.addr)
	d.cancel()
	c.mu.Lock()
	c.dialing = nil
	var failed callConn
	switch {
	case err != nil:
		err = &dialError{fmt.Errorf("dispatch: dial %s %s: %w", c.dialer, c.addr, err)}
	case c.closed.IsSet():
		failed = conn // never used: closed once mu is let go
		err = ErrShutdown
	default:
		failed = c.conn // if any: it has failed, and is closed to free what it holds
		c.conn = conn
	}
	if c.closed.IsSet() {
		err = ErrShutdown
	}
	d.conn = c.conn
	c.mu.Unlock()
	d.done.Set(err)
	if failed != nil {
		failed.close()
	}
	if err != nil {
		return nil, err
	}
	return d.conn, nil
}

// dialError is the error of a call whose Dial failed: nothing of it was
// sent, which a Client of replicas needs to know (it tries another).
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// Close closes the Client. Calls in flight fail with ErrShutdown at once, on
// the network and on the shortcut alike — except shortcut calls whose
// context cannot end, which run their handler on the caller's goroutine and
// so return ErrShutdown when the handler does.
func (c *Client) Close() error {
	c.mu.Lock()
	if !c.closed.Set(ErrShutdown) {
		c.mu.Unlock()
		return ErrShutdown
	}
	conn, d := c.conn, c.dialing
	c.mu.Unlock()
	if c.set != nil {
		c.set.close()
	}
	if d != nil {
		d.cancel() // its dial sees closed when it returns
	}
	c.watching.cancelAll()
	if conn != nil {
		conn.close()
	}
	if c.quiet != nil {
		c.quiet.End()
	}
	return nil
}

// Call calls serviceMethod ("Service.Method") with args and waits for the
// reply, which it writes to reply, a non-nil pointer. *reply is zeroed
// first and left zero on error. A handler's error is an *Error; a failure of
// the connection is not, and names the call (see ErrShutdown). When ctx
// ends first, Call returns an *Error matching ctx.Err() whose text names
// the call too ("Arith.Multiply over mux: context deadline exceeded"), and
// the handler's context is cancelled. A nil ctx panics, as it does in
// net/http.
func (c *Client) Call(ctx context.Context, serviceMethod string, args, reply any) error {
	if ctx == nil {
		panic("dispatch: nil Context") // as net/http's NewRequestWithContext does
	}
	if len(c.opts.interceptors) == 0 {
		return c.call(ctx, serviceMethod, args, reply, nil)
	}
	return c.intercepted(ctx, serviceMethod, args, reply)
}

// CallWithInfo is Call that says where the call went: once it returns,
// *info is the call's CallInfo as the Client's interceptors see it at
// their end — the Path the call took, and the RemoteAddr of the Server it
// went to (the address dialled; for a Client of replicas, the replica's).
// A protocol layered on a Client reports it to its own callers so
// (grpczerodial fills grpc.Peer from it).
func (c *Client) CallWithInfo(ctx context.Context, serviceMethod string, args, reply any, info *CallInfo) error {
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	in := c.callInfo(serviceMethod)
	var err error
	if len(c.opts.interceptors) == 0 {
		err = c.call(ctx, serviceMethod, args, reply, in)
	} else {
		err = c.interceptedWith(ctx, serviceMethod, args, reply, in)
	}
	*info = *in
	return err
}

// callInfo is the CallInfo of a call of name, before it is made.
func (c *Client) callInfo(name string) *CallInfo {
	return &CallInfo{Method: name, Path: c.expectedPath(name, nil, nil), RemoteAddr: c.remote}
}

// intercepted runs a call through the Client's interceptors, with its
// CallInfo in the context.
func (c *Client) intercepted(ctx context.Context, name string, args, reply any) error {
	return c.interceptedWith(ctx, name, args, reply, c.callInfo(name))
}

func (c *Client) interceptedWith(ctx context.Context, name string, args, reply any, info *CallInfo) error {
	ctx = context.WithValue(ctx, callInfoKey{}, info)
	h := chain(c.opts.interceptors, name, func(ctx context.Context, args, reply any) error { return c.call(ctx, name, args, reply, info) })
	return h(ctx, args, reply)
}

// expectedPath is the path a call of name would take now, or a stream of
// name whose messages are of types in and out when in is not nil.
func (c *Client) expectedPath(name string, in, out reflect.Type) Path {
	if c.opts.shortcut == ShortcutOff {
		return c.netPath
	}
	e := shortcuts.lookupCached(c.key, c.wire, &c.found)
	if e == nil {
		return c.netPath
	}
	if in != nil {
		if _, direct, _, err := c.streamMethod(e.srv, name, in, out); err == nil && direct {
			return PathShortcutDirect
		}
	} else if c.opts.shortcut == ShortcutDirect {
		if m, _ := c.method(e.srv, name); m != nil && m.borrows && m.stream == nil {
			return PathShortcutDirect
		}
	}
	return PathShortcutCopy
}

// call is Call inside the interceptors; info, when not nil, is told the
// path the call takes.
func (c *Client) call(ctx context.Context, serviceMethod string, args, reply any, info *CallInfo) error {
	if err := checkReply(reply); err != nil {
		return err
	}
	return c.callChecked(ctx, serviceMethod, args, reply, info)
}

// callChecked is call for a reply known to be a non-nil pointer (a typed
// call's), which needs no check by reflection.
func (c *Client) callChecked(ctx context.Context, serviceMethod string, args, reply any, info *CallInfo) error {
	if c.set != nil {
		return c.set.call(ctx, serviceMethod, args, reply, info)
	}
	if c.opts.shortcut != ShortcutOff {
		if e := shortcuts.lookupCached(c.key, c.wire, &c.found); e != nil {
			if done, path, err := c.shortcut(ctx, e, serviceMethod, args, reply, info); done {
				if err != nil {
					return callError(ctx, serviceMethod, path, err)
				}
				return nil
			}
		} else if c.reachedDraining() {
			zero(reply)
			capturesOf(ctx).deliver(nil) // as the draining Server's reply would
			return errShuttingDown
		}
	}
	if info != nil {
		info.Path = c.netPath
	}
	zero(reply)
	conn, err := c.netConn(ctx)
	if err == nil {
		err = conn.call(ctx, serviceMethod, args, reply)
	}
	if err != nil {
		return callError(ctx, serviceMethod, c.netPath, err)
	}
	return nil
}

// callError is the error Call returns for the call of method over path
// that err ended: a failure of the Client's own names the call (see
// ErrShutdown), and so does the end of the caller's context (see
// callCtxError); what the callee answered is returned as it came.
func callError(ctx context.Context, method string, path Path, err error) error {
	if e, ok := err.(*Error); ok {
		return callCtxError(ctx, method, path, e)
	}
	if _, ok := err.(*callFailure); ok {
		return err // named already
	}
	if _, ok := err.(*dialError); ok || passedOn(err) {
		return named(method, path, err)
	}
	return err
}

// reachedDraining reports whether the Server a shortcut call last reached
// is draining, now that it has left the registry: a new call or stream is
// refused with errShuttingDown, as the draining Server would refuse it.
func (c *Client) reachedDraining() bool {
	srv := c.reached.Load()
	return srv != nil && srv.isDraining() && !c.closed.IsSet()
}

// netConn returns the connection a call or stream takes over the network,
// dialling it if need be, or the error it fails with at once.
func (c *Client) netConn(ctx context.Context) (callConn, error) {
	if c.closed.IsSet() {
		return nil, ErrShutdown
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	conn, err := c.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx) // the caller's context ended first, as on every path
		}
		return nil, err
	}
	return conn, nil
}

// checkReply is the nil rule, the same on every path.
func checkReply(reply any) error {
	if reply == nil {
		return ErrNilReply
	}
	v := reflect.ValueOf(reply)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return ErrNilReply
	}
	return nil
}

// Call is an asynchronous call made by Go.
type Call struct {
	ServiceMethod string
	Args          any
	Reply         any
	Error         error      // set when the call is complete
	Done          chan *Call // receives the Call when it is complete
}

// Go starts a call and returns at once; the Call is sent on done when it
// completes. done must be buffered (or nil, for a new channel of 1): Go
// panics on an unbuffered one, and drops a Call that finds done full, as
// net/rpc does.
func (c *Client) Go(ctx context.Context, serviceMethod string, args, reply any, done chan *Call) *Call {
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	if done == nil {
		done = make(chan *Call, 1)
	} else if cap(done) == 0 {
		panic("dispatch: done channel is unbuffered")
	}
	call := &Call{ServiceMethod: serviceMethod, Args: args, Reply: reply, Done: done}
	go func() {
		call.Error = c.Call(ctx, serviceMethod, args, reply)
		select {
		case call.Done <- call:
		default:
			// As net/rpc does: a full channel drops the Call rather than
			// leave this goroutine blocked for ever.
		}
	}()
	return call
}
