package fallback

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Defaults of a Listener's settings.
const (
	// DefaultQueue is how many connections wait in each listener's queue
	// for Accept (WithQueue).
	DefaultQueue = 64
	// DefaultTimeout bounds how long Offer waits for a connection's first
	// bytes (WithTimeout): the default handshake timeout of the transports.
	DefaultTimeout = 10 * time.Second
)

// ErrFull is Offer's error when the listener that takes the connection's
// kind has as many connections waiting for Accept as its queue holds: the
// connection is closed, rather than left to pile up while nobody accepts.
var ErrFull = errors.New("fallback: queue full")

// Option configures a Listener made by New.
type Option func(*config)

type config struct {
	queue   int
	timeout time.Duration
	errs    []error
}

// WithQueue sets how many connections wait for Accept in each listener of
// the tree (the one New returns and each Split), DefaultQueue by default.
// Past it Offer closes the connection and returns ErrFull. n must be
// positive, or New fails.
func WithQueue(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs = append(c.errs, fmt.Errorf("fallback: WithQueue(%d): must be positive", n))
			return
		}
		c.queue = n
	}
}

// WithTimeout bounds how long Offer waits for the first bytes of a
// connection it must read to classify (one from a program's own listener;
// a transport hands on connections already classified, within its own
// handshake timeout). DefaultTimeout by default; d must be positive, or New
// fails.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("fallback: WithTimeout(%v): must be positive", d))
			return
		}
		c.timeout = d
	}
}

// Listener is a net.Listener of connections handed to it by Offer: those a
// zerodial listener found not to speak zerodial (tcp.WithFallback,
// mux.WithFallback), or a program's own. Accept returns them, each a
// net.Conn whose Read first replays the bytes read to classify it. A
// Listener and the listeners Split makes from it form a tree that shares one
// table of which listener takes which Kind; the one New returns takes every
// kind no Split took. It is safe for concurrent use.
type Listener struct {
	root *Listener // the listener New made; itself for that one
	cfg  *config

	queue chan net.Conn
	done  chan struct{} // closed by Close

	// The root's mu guards the tree: every listener's closed, the routes,
	// the address, and sends to every queue (so that none follows Close's
	// draining).
	mu     sync.Mutex
	closed bool
	routes map[Kind]*Listener // root only
	kids   []*Listener        // root only: every Split listener
	addr   net.Addr           // root only: nil until the first Offer
}

// New returns a Listener configured by opts, or an error naming every
// invalid option.
func New(opts ...Option) (*Listener, error) {
	cfg := &config{queue: DefaultQueue, timeout: DefaultTimeout}
	for _, o := range opts {
		if o != nil {
			o(cfg)
		}
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, err
	}
	l := newListener(nil, cfg)
	l.routes = make(map[Kind]*Listener)
	return l, nil
}

func newListener(root *Listener, cfg *config) *Listener {
	l := &Listener{root: root, cfg: cfg, queue: make(chan net.Conn, cfg.queue), done: make(chan struct{})}
	if root == nil {
		l.root = l
	}
	return l
}

// Split returns a listener of the tree that takes the connections of the
// given kinds from now on; the others stay where they went before.
// Connections already queued stay where they are. A kind named by several
// Splits goes to the latest. Split of a Split listener is a Split of the
// tree: the new listener takes its kinds from whichever listener had them.
// Split of a closed tree returns a closed listener.
func (l *Listener) Split(kinds ...Kind) *Listener {
	r := l.root
	kid := newListener(r, r.cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kids = append(r.kids, kid)
	if r.closed {
		kid.closed = true
		close(kid.done)
		return kid
	}
	for _, k := range kinds {
		r.routes[k] = kid
	}
	return kid
}

// Offer hands c to the tree of l, which takes it over: it queues c for
// Accept on the listener that takes c's kind, or closes c and returns why
// not — ErrFull when that listener's queue is full, an error matching
// net.ErrClosed when it is closed, one matching ErrUndecided when c's
// first bytes did not say what it speaks in time. It never blocks on Accept.
//
// To learn c's kind, Offer reads c's first bytes (at most PrefixLen), under
// a read deadline of the listener's timeout (WithTimeout) that it clears
// afterwards, unless c is already classified (a connection Sniff returned;
// the transports hand on only those) or is a TLS connection that
// negotiated a protocol by ALPN: then it does not read at all, and returns
// at once. A TLS connection whose handshake is not done (one from
// tls.NewListener) has it done first, within the same timeout, so that an
// ALPN client is handed on unread, as the *tls.Conn that net/http needs to
// serve HTTP/2 over TLS. When it reads, it waits for the peer: a program's own accept
// loop should call it on a goroutine of its own for each connection.
func (l *Listener) Offer(c net.Conn) error {
	r := l.root
	sc, k, err := r.sniff(c)
	if err != nil {
		c.Close()
		return err
	}
	r.mu.Lock()
	if r.addr == nil {
		r.addr = c.LocalAddr()
	}
	dst := r.routes[k]
	if dst == nil {
		dst = r
	}
	if dst.closed {
		r.mu.Unlock()
		sc.Close()
		return fmt.Errorf("fallback: the listener of %v connections is closed: %w", k, net.ErrClosed)
	}
	select {
	case dst.queue <- sc:
		r.mu.Unlock()
		return nil
	default:
		r.mu.Unlock()
		sc.Close()
		return fmt.Errorf("%w: %d %v connections wait for Accept", ErrFull, cap(dst.queue), k)
	}
}

// sniff classifies c as Offer does: without reading when it can, and
// otherwise under the listener's timeout. A TLS connection's handshake,
// if not done yet (one from tls.NewListener), is done first, so that a
// client that negotiates a protocol by ALPN is handed on unread as well.
func (r *Listener) sniff(c net.Conn) (net.Conn, Kind, error) {
	if cc, ok := c.(*conn); ok {
		return c, cc.kind, nil
	}
	tc, isTLS := c.(*tls.Conn)
	if isTLS && tc.ConnectionState().HandshakeComplete {
		if k, ok := alpnKind(tc); ok {
			return c, k, nil
		}
	}
	if err := c.SetReadDeadline(time.Now().Add(r.cfg.timeout)); err != nil {
		return nil, Unknown, fmt.Errorf("fallback: %w", err)
	}
	if isTLS {
		// The handshake writes too: bound it whole.
		if err := c.SetWriteDeadline(time.Now().Add(r.cfg.timeout)); err != nil {
			return nil, Unknown, fmt.Errorf("fallback: %w", err)
		}
		if err := tc.Handshake(); err != nil {
			return nil, Unknown, fmt.Errorf("fallback: tls handshake: %w", err)
		}
	}
	sc, k, err := Sniff(c, nil) // no read after all for an ALPN client
	if err != nil {
		return nil, Unknown, err
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, Unknown, fmt.Errorf("fallback: %w", err)
	}
	return sc, k, nil
}

// Accept waits for the next connection handed to this listener and returns
// it; after Close it returns an error matching net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.queue:
		if l.isClosed() {
			// Close raced with this Accept; it drains the rest.
			c.Close()
			return nil, errClosed
		}
		return c, nil
	case <-l.done:
		return nil, errClosed
	}
}

var errClosed = fmt.Errorf("fallback: accept: %w", net.ErrClosed)

func (l *Listener) isClosed() bool {
	l.root.mu.Lock()
	defer l.root.mu.Unlock()
	return l.closed
}

// Close closes the listener and the connections queued on it that Accept
// has not returned; connections Accept returned are their taker's. Its
// kinds are refused from then on (Offer closes them), not handed to another
// listener. Close of the listener New returned closes every listener of the
// tree. It does not close a zerodial listener that offers connections to
// it: that one's own Close does that, and Offer then refuses what it still
// hands over.
func (l *Listener) Close() error {
	r := l.root
	r.mu.Lock()
	var closing []*Listener
	if l == r {
		closing = append([]*Listener{r}, r.kids...)
	} else {
		closing = []*Listener{l}
	}
	n := 0
	for _, x := range closing {
		if !x.closed {
			x.closed = true
			close(x.done)
			closing[n] = x
			n++
		}
	}
	closing = closing[:n]
	r.mu.Unlock()
	// No Offer queues on a closed listener, so what is queued now is all
	// there will be.
	for _, x := range closing {
		for drained := false; !drained; {
			select {
			case c := <-x.queue:
				c.Close()
			default:
				drained = true
			}
		}
	}
	return nil
}

// Addr returns the local address of the first connection offered (for a
// transport's listener, the address it listens on, as its connections see
// it), and until then a placeholder whose Network and String are
// "fallback".
func (l *Listener) Addr() net.Addr {
	r := l.root
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.addr == nil {
		return placeholder{}
	}
	return r.addr
}

// placeholder is the address of a Listener offered nothing yet.
type placeholder struct{}

func (placeholder) Network() string { return "fallback" }
func (placeholder) String() string  { return "fallback" }
