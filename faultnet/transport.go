package faultnet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zerodial/transport"
)

// Transport is a transport.Transport whose dials and connections go
// through a Net's faults. Net.Wrap makes one.
type Transport struct {
	n     *Net
	inner transport.Transport
	host  string
	done  chan struct{} // closed by Close

	mu     sync.Mutex
	closed bool
	socks  map[*socket]struct{}
}

var (
	_ transport.Transport    = (*Transport)(nil)
	_ transport.FrameLimiter = (*Transport)(nil)
)

// String returns the wrapped transport's name, so that what names the
// path a call took (dispatch.CallInfo's Path) is what it would be without
// the faults.
func (t *Transport) String() string { return t.inner.String() }

// Host returns the name the Transport dials from.
func (t *Transport) Host() string { return t.host }

// MaxFrameSize returns the wrapped transport's frame limit
// (transport.FrameLimiter), or transport.DefaultMaxFrameSize if it states
// none.
func (t *Transport) MaxFrameSize() int {
	if fl, ok := t.inner.(transport.FrameLimiter); ok {
		return fl.MaxFrameSize()
	}
	return transport.DefaultMaxFrameSize
}

// Listen is the wrapped transport's: the faults of a connection are all
// injected at its dialling end, both ways, so a listener is the wrapped
// one, with every ability it has.
func (t *Transport) Listen(addr string) (transport.Listener, error) { return t.inner.Listen(addr) }

// Dial connects to addr through the Net: a partition or a rule may refuse
// the dial or hold it, and the connection's frames meet the rules that
// match them.
func (t *Transport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if t.isClosed() {
		return nil, dialClosed(addr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := t.n.dialled(t.host, addr)
	if err := t.beforeDial(ctx, c); err != nil {
		return nil, err
	}
	inner, err := t.inner.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	s := newSocket(t, c, inner)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		inner.Close()
		return nil, dialClosed(addr)
	}
	t.socks[s] = struct{}{}
	t.mu.Unlock()
	t.n.track(s)
	s.start()
	return s, nil
}

// beforeDial applies the partitions and rules of a dial: it returns the
// dial's error, or nil once the dial may go ahead.
func (t *Transport) beforeDial(ctx context.Context, c connID) error {
	now := time.Now()
	h := t.n.heldUntil(c.host, c.addr, now)
	if h.refuse {
		t.n.record(Event{Conn: c.String(), conn: c, Kind: Refused})
		return refused(c.addr)
	}
	if h.holds {
		var d time.Duration
		if !h.never {
			d = h.until.Sub(now)
		}
		t.n.record(Event{Conn: c.String(), conn: c, Kind: Held, Delay: d})
		if err := t.wait(ctx, c.addr, h.until, h.never); err != nil {
			return err
		}
	}
	for _, r := range t.n.matching(c.host, c.addr, Both, "") {
		if r.Refuse > 0 && t.n.draw(c, Both, 0, r, "refuse") < r.Refuse {
			t.n.record(Event{Conn: c.String(), conn: c, Kind: Refused})
			return refused(c.addr)
		}
		if r.Hang > 0 && t.n.draw(c, Both, 0, r, "hang") < r.Hang {
			t.n.record(Event{Conn: c.String(), conn: c, Kind: Hung})
			return t.wait(ctx, c.addr, time.Time{}, true)
		}
	}
	return nil
}

// wait waits until until (never: for ever), ctx's end or the Transport's
// Close, and returns the error of the latter two.
func (t *Transport) wait(ctx context.Context, addr string, until time.Time, never bool) error {
	var at <-chan time.Time
	if !never {
		timer := time.NewTimer(time.Until(until))
		defer timer.Stop()
		at = timer.C
	}
	select {
	case <-at:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("faultnet: dial %s: %w", addr, ctx.Err())
	case <-t.done:
		return dialClosed(addr)
	}
}

func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

func (t *Transport) forget(s *socket) {
	t.mu.Lock()
	delete(t.socks, s)
	t.mu.Unlock()
}

// Close closes every socket the Transport dialled that is still open, or
// still sending what it was given before its Close: what they held is
// dropped, and their goroutines have ended when Close returns. Then it
// closes the wrapped transport. Dial fails with transport.ErrClosed
// afterwards.
func (t *Transport) Close() error {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		close(t.done)
	}
	socks := t.socks
	t.socks = map[*socket]struct{}{}
	t.mu.Unlock()
	for s := range socks {
		s.abort(nil)
	}
	for s := range socks {
		s.wg.Wait()
	}
	return t.inner.Close()
}

func dialClosed(addr string) error {
	return fmt.Errorf("faultnet: dial %s: %w", addr, transport.ErrClosed)
}

func refused(addr string) error {
	return fmt.Errorf("faultnet: dial %s: %w", addr, transport.ErrConnectionRefused)
}
