package shm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/unixsock"
)

// backlog is how many connections a listener holds met and not yet
// accepted, or meeting: each holds its mapping and six descriptors. Past
// it, diallers wait in the unix socket's backlog, as over TCP.
const backlog = 16

// defaultAddr is the pattern an empty address listens on: a free name in
// Linux's abstract namespace, with no file to remove.
const defaultAddr = "@zerodial-shm-*"

// Listen binds the unix socket of addr ("unix:PATH", "unix:@name" for the
// abstract namespace; docs/unix.md says how a "*" picks a free name, and
// how a stale socket file is replaced). An empty address picks a free
// abstract name. Diallers meet it there, and their connections are
// accepted once their memory is checked and mapped.
func (t *Transport) Listen(addr string) (transport.Listener, error) {
	if t.err != nil {
		return nil, t.err
	}
	path := defaultAddr
	if addr != "" {
		var ok bool
		if path, ok = unixsock.Path(addr); !ok {
			return nil, badAddr("listen", addr)
		}
	}
	nl, err := unixsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	l := &listener{t: t, nl: nl, ready: make(chan *socket, backlog), slots: make(chan struct{}, backlog),
		done: make(chan struct{}), meeting: make(map[*unixsock.Conn]struct{})}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func badAddr(op, addr string) error {
	return fmt.Errorf("shm: %s %q: the address must be a unix socket's, \"unix:PATH\" or \"unix:@name\" (docs/unix.md)", op, addr)
}

// Dial connects to the listener at addr ("unix:PATH"), and meets it:
// sends it the shared memory, takes its wake-ups. It fails with an error
// matching transport.ErrConnectionRefused when nobody listens there, with
// ctx's error when ctx ends first, and with one matching
// transport.ErrProtocol when the peer is not a shm listener or refuses.
func (t *Transport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.dialled.Closed() {
		return nil, dialClosed(addr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, ok := unixsock.Path(addr)
	if !ok {
		return nil, badAddr("dial", addr)
	}
	var d net.Dialer
	nc, err := unixsock.Dial(ctx, d.DialContext, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if unixsock.Absent(err) {
			return nil, fmt.Errorf("shm: dial %s: %w (%v)", addr, transport.ErrConnectionRefused, err)
		}
		return nil, fmt.Errorf("shm: dial %s: %w", addr, err)
	}
	c := nc.(*unixsock.Conn) // unixsock.Dial's, with net's own dialer
	stop := during(c, ctx, t.opts.HandshakeTimeout)
	e, err := meetDial(c, t.opts.ringSize)
	stopped := stop()
	if err != nil || stopped {
		if e != nil {
			e.release()
		}
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("shm: dial %s: %w", addr, err)
	}
	s := newSocket(c, e, t.opts.ringSize, t.opts.MaxFrameSize, true)
	s.dialledBy = &t.dialled
	if !t.dialled.Add(s) {
		s.Close()
		return nil, dialClosed(addr)
	}
	return s, nil
}

// during bounds a meeting over c by timeout and by ctx: c's deadline is
// set, and moved to now when ctx ends. stop clears it, and reports
// whether ctx ended meanwhile.
func during(c *unixsock.Conn, ctx context.Context, timeout time.Duration) (stop func() bool) {
	c.SetDeadline(time.Now().Add(timeout))
	after := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	return func() bool {
		if !after() {
			return true // ctx ended: its deadline may be set, or be set yet
		}
		c.SetDeadline(time.Time{})
		return false
	}
}

// listener accepts unix socket connections, meets each on a goroutine of
// its own (so that a silent dialler holds up no other), and hands the
// sockets met to Accept.
type listener struct {
	t     *Transport
	nl    net.Listener
	ready chan *socket  // met, for Accept
	slots chan struct{} // one per connection meeting or ready: at most backlog
	done  chan struct{}

	closed    atomic.Bool
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and the meetings

	mu      sync.Mutex
	meeting map[*unixsock.Conn]struct{} // closed by Close, to end their meetings
}

var (
	_ transport.FrameLimiter   = (*listener)(nil)
	_ transport.ClosedReporter = (*listener)(nil)
	_ transport.WireReporter   = (*listener)(nil)
)

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return
		}
		nc, err := l.nl.Accept()
		if err != nil {
			if l.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: the dialler has seen its connection
			// end; try the next.
			l.t.opts.Logger.Warn("shm: accept", "addr", l.nl.Addr().String(), "err", err)
			<-l.slots
			continue
		}
		c, ok := nc.(*unixsock.Conn)
		if !ok || !l.track(c) {
			nc.Close()
			<-l.slots
			continue
		}
		l.wg.Add(1)
		go l.meet(c)
	}
}

// track records c as meeting, unless the listener is closed.
func (l *listener) track(c *unixsock.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return false
	}
	l.meeting[c] = struct{}{}
	return true
}

func (l *listener) untrack(c *unixsock.Conn) {
	l.mu.Lock()
	delete(l.meeting, c)
	l.mu.Unlock()
}

func (l *listener) meet(c *unixsock.Conn) {
	defer l.wg.Done()
	c.SetDeadline(time.Now().Add(l.t.opts.HandshakeTimeout))
	e, ringSize, err := meetAccept(c)
	l.untrack(c)
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if err != nil {
		if e != nil {
			e.release()
		}
		c.Close()
		<-l.slots
		l.t.opts.Logger.Info("shm: a connection failed to meet", "addr", l.nl.Addr().String(), "err", err)
		return
	}
	s := newSocket(c, e, ringSize, l.t.opts.MaxFrameSize, false)
	select {
	case l.ready <- s: // its slot is freed by Accept
	case <-l.done:
		s.Close()
		<-l.slots
	}
}

func (l *listener) Accept() (transport.Socket, error) {
	select {
	case <-l.done:
		return nil, transport.ErrClosed
	default:
	}
	select {
	case s := <-l.ready:
		<-l.slots
		return s, nil
	case <-l.done:
		return nil, transport.ErrClosed
	}
}

// Close stops listening at once (the socket file is removed), ends the
// meetings under way, and closes the sockets met and not yet accepted.
func (l *listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed.Store(true)
		for c := range l.meeting {
			c.Close()
		}
		l.mu.Unlock()
		err = l.nl.Close()
		close(l.done)
		l.wg.Wait()
		for {
			select {
			case s := <-l.ready:
				s.Close()
			default:
				return
			}
		}
	})
	return err
}

func (l *listener) Addr() net.Addr { return l.nl.Addr() }

// MaxFrameSize returns the largest message the listener's sockets carry.
func (l *listener) MaxFrameSize() int { return l.t.opts.MaxFrameSize }

// Closed reports whether Close has been called (transport.ClosedReporter).
func (l *listener) Closed() bool { return l.closed.Load() }

// Wire reports the shm protocol (transport.WireReporter).
func (l *listener) Wire() transport.Wire { return wire }
