package memory

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/dialled"
	"github.com/zerodial/transport/internal/options"
)

// Addr is a memory transport address.
type Addr string

// Network returns "memory".
func (Addr) Network() string { return "memory" }

// String returns the address itself.
func (a Addr) String() string { return string(a) }

// spacedAddr is a listener's address: an Addr that also names the Transport
// whose address space it belongs to (transport.AddrSpacer).
type spacedAddr struct {
	Addr
	space *Transport
}

func (a spacedAddr) AddrSpace() any { return a.space }

// AddrSpace returns t itself: each Transport is an address space of its own.
func (t *Transport) AddrSpace() any { return t }

// backlog is how many dialled sockets wait for Accept before Dial blocks, the
// analogue of a TCP listen backlog.
const backlog = 128

// Transport is an in-memory transport.Transport. The zero value is not
// usable; call New.
type Transport struct {
	opts options.Common
	err  error // the options' problems, returned by Dial and Listen

	mu        sync.Mutex
	listeners map[Addr]*listener
	nextID    uint64

	// dialled holds the open sockets Dial made, which Close closes.
	dialled dialled.Set
}

var _ transport.Transport = (*Transport)(nil)
var _ transport.FrameLimiter = (*Transport)(nil)
var _ transport.AddrSpacer = (*Transport)(nil)
var _ transport.WireReporter = (*Transport)(nil)

// wire is what every memory Transport and listener speaks: no framing, no
// TLS. Address spaces, not Wires, keep two Transports apart.
var wire = transport.Wire{Protocol: "memory"}

// Wire reports the memory protocol (transport.WireReporter).
func (t *Transport) Wire() transport.Wire { return wire }

// New returns a Transport with its own, empty address space, configured by
// opts (WithMaxFrameSize, WithLogger), applied in order. New does not fail:
// if an option is invalid, every Dial and Listen of the Transport returns
// an error naming each invalid option and its value (errors.Join).
func New(opts ...Option) *Transport {
	o := options.New("memory")
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return &Transport{opts: o, err: o.Err(), listeners: make(map[Addr]*listener)}
}

// String returns "memory".
func (t *Transport) String() string { return "memory" }

// MaxFrameSize returns the largest message this transport carries.
func (t *Transport) MaxFrameSize() int { return t.opts.MaxFrameSize }

func (t *Transport) id() uint64 {
	t.nextID++
	return t.nextID
}

// Listen binds addr in this Transport's address space. An empty address or
// ":0" picks a fresh one ("mem:N"). Listening on an address in use fails
// with an error matching syscall.EADDRINUSE.
func (t *Transport) Listen(addr string) (transport.Listener, error) {
	if t.err != nil {
		return nil, t.err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a := Addr(addr)
	if addr == "" || addr == ":0" {
		a = Addr("mem:" + strconv.FormatUint(t.id(), 10))
		for t.listeners[a] != nil { // someone chose that name by hand
			a = Addr("mem:" + strconv.FormatUint(t.id(), 10))
		}
	}
	if t.listeners[a] != nil {
		return nil, fmt.Errorf("memory: listen %s: %w", a, syscall.EADDRINUSE)
	}
	l := &listener{t: t, addr: a, backlog: make(chan *socket, backlog), done: make(chan struct{})}
	t.listeners[a] = l
	return l, nil
}

// Dial connects to the listener at addr. It fails at once with an error
// matching transport.ErrConnectionRefused when nobody listens there, and
// waits for room in the listener's backlog no longer than ctx allows, and
// no longer than the Transport stays open (Close).
func (t *Transport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if t.err != nil {
		return nil, t.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	l := t.listeners[Addr(addr)]
	var id uint64
	if l != nil {
		id = t.id()
	}
	t.mu.Unlock()
	if l == nil {
		return nil, refused(addr)
	}
	client, server := pair(Addr("mem-client:"+strconv.FormatUint(id, 10)), l.addr, t.opts.MaxFrameSize)
	client.dialledBy = &t.dialled
	if !t.dialled.Add(client) {
		return nil, dialClosed(addr)
	}
	select {
	case l.backlog <- server:
	case <-l.done:
		client.Close()
		return nil, refused(addr)
	case <-client.done: // the Transport's Close
		return nil, dialClosed(addr)
	case <-ctx.Done():
		client.Close()
		return nil, ctx.Err()
	}
	// A Close racing with the send above may have drained the backlog
	// already; then nobody will ever accept server.
	select {
	case <-l.done:
		client.Close()
		return nil, refused(addr)
	default:
	}
	if client.closed.Load() {
		// The Transport's Close came as server was queued: its
		// acceptor sees the connection end, as a tcp listener's would.
		return nil, dialClosed(addr)
	}
	return client, nil
}

func dialClosed(addr string) error {
	return fmt.Errorf("memory: dial %s: %w", addr, transport.ErrClosed)
}

// Close closes every socket this Transport dialled that is still open:
// their Send and Recv fail with transport.ErrClosed, and their peers see
// the connection end (Recv returns io.EOF once it has what was sent). Dial
// fails with transport.ErrClosed afterwards, a Dial waiting for room in a
// backlog included. Listeners are not affected, nor the sockets they
// accepted: close them on their own. Close is idempotent.
//
// A memory Transport starts no goroutine, so one that is dropped without
// Close leaks nothing; Close says it is done.
func (t *Transport) Close() error {
	t.dialled.Close()
	return nil
}

func refused(addr string) error {
	return fmt.Errorf("memory: dial %s: %w", addr, transport.ErrConnectionRefused)
}

type listener struct {
	t         *Transport
	addr      Addr
	backlog   chan *socket
	done      chan struct{}
	closed    atomic.Bool // set as Close starts: cheaper to test than done
	closeOnce sync.Once
}

func (l *listener) Accept() (transport.Socket, error) {
	select {
	case <-l.done:
		return nil, transport.ErrClosed
	default:
	}
	select {
	case s := <-l.backlog:
		return s, nil
	case <-l.done:
		return nil, transport.ErrClosed
	}
}

// Close frees the address at once and closes the sockets still waiting in
// the backlog, so their dialers see the connection end.
func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		l.t.mu.Lock()
		if l.t.listeners[l.addr] == l {
			delete(l.t.listeners, l.addr)
		}
		l.t.mu.Unlock()
		close(l.done)
		for {
			select {
			case s := <-l.backlog:
				s.Close()
			default:
				return
			}
		}
	})
	return nil
}

// MaxFrameSize returns the largest message the listener's sockets carry.
func (l *listener) MaxFrameSize() int { return l.t.opts.MaxFrameSize }

// Closed reports whether Close has been called (transport.ClosedReporter).
func (l *listener) Closed() bool { return l.closed.Load() }

// Wire reports the memory protocol (transport.WireReporter).
func (l *listener) Wire() transport.Wire { return wire }

func (l *listener) Addr() net.Addr { return spacedAddr{l.addr, l.t} }
