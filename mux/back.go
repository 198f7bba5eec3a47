package mux

import (
	"context"
	"errors"
	"fmt"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/dialled"
)

// Back returns a Transport that opens streams the other way on l's
// sessions: its Dial(ctx, addr) opens a new stream towards the peer of the
// live session whose remote address is addr, over the connection that peer
// made. A server thus calls a client that cannot be dialled (behind NAT or
// a firewall) as long as the client keeps its session open; the client
// serves the streams with Transport.Incoming (or ClientConn.Incoming).
//
// addr is the accepted connection's RemoteAddr().String(), which is what
// a dispatch handler sees of its caller, so a handler calls back its own
// caller with:
//
//	info, _ := dispatch.CallInfoFrom(ctx)
//	c, err := dispatch.Dial(ctx, back, info.RemoteAddr.String())
//	// ... c.Call(ctx, "Service.Method", args, &reply); c.Close()
//
// l must be a Listener of this package (Transport.Listen or NewServerConn);
// Back fails for any other. Dial fails with an error matching
// transport.ErrConnectionRefused ("no session from addr") when l has no
// session from addr, with one matching ErrSessionClosed when that session
// has ended, and with ctx's error when ctx ends first. The clients of a
// unix socket are unnamed, so share the address "unix:": Dial to it fails
// as refused, naming the ambiguity, while more than one of them has a
// session (docs/unix.md). Like Transport.Dial
// it costs no round trip, so a peer that serves nothing is found out on
// the first Send or Recv: it closes such streams at once (see
// Transport.Incoming). With a stream limit (WithStreamLimit), at most that
// many streams opened by Back are open per session, apart from the streams
// the peer opened: past it, Dial waits within ctx.
//
// A stream opened by Back is a Socket as an accepted one is, and counts as
// one for l.Close: the session of a closed listener ends when its last
// stream, of either kind, is closed, and until then Back may still open
// streams on it, so that the calls in flight can finish theirs. Back's
// Listen fails, since it only dials; its String is "mux"; it reports no
// transport.Wire, so dispatch's in-process shortcut never stands in for it.
// Its Close closes the streams it opened that are still open, and its Dial
// fails with transport.ErrClosed afterwards; the sessions are l's, and
// serve on.
func Back(l transport.Listener) (transport.Transport, error) {
	switch l := l.(type) {
	case *listener:
		return &backTransport{l: l}, nil
	case *connListener:
		return &backTransport{l: l.l}, nil
	}
	return nil, fmt.Errorf("mux: Back: %T is not a Listener of package mux (Transport.Listen or NewServerConn)", l)
}

// backTransport is the Transport Back returns.
type backTransport struct {
	l       *listener
	dialled dialled.Set // the open streams Dial made: Close closes them
}

var (
	_ transport.Transport    = (*backTransport)(nil)
	_ transport.FrameLimiter = (*backTransport)(nil)
)

// errBackListen fails backTransport.Listen.
var errBackListen = errors.New("mux: the Transport of Back only dials: Listen with a mux Transport")

// String returns "mux".
func (b *backTransport) String() string { return "mux" }

// MaxFrameSize returns the largest message the streams carry.
func (b *backTransport) MaxFrameSize() int { return b.l.cfg.MaxFrameSize }

// Listen fails: see Back.
func (b *backTransport) Listen(string) (transport.Listener, error) { return nil, errBackListen }

// Dial opens a stream towards the peer of the session from addr: see Back.
func (b *backTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if err := ctx.Err(); err != nil {
		return nil, backErr(addr, err)
	}
	if b.dialled.Closed() {
		return nil, backErr(addr, transport.ErrClosed)
	}
	ss, err := b.l.reserveBack(addr)
	if err != nil {
		return nil, err
	}
	c, err := ss.openBack(ctx)
	if err != nil {
		return nil, backErr(addr, err)
	}
	s := &backSocket{socket: newSocket(c, b.l.cfg.Common), set: &b.dialled}
	if !b.dialled.Add(s) {
		s.socket.Close()
		return nil, backErr(addr, transport.ErrClosed)
	}
	return s, nil
}

// Close closes the streams Dial opened that are still open; Dial fails
// with transport.ErrClosed afterwards. The sessions are the listener's,
// and serve on. Close is idempotent.
func (b *backTransport) Close() error {
	b.dialled.Close()
	return nil
}

// backSocket is a stream Back's Dial opened, which its Close closes
// unless it was closed first.
type backSocket struct {
	*socket
	set *dialled.Set // its Transport's
}

// Close closes the stream and lets its Transport forget it.
func (s *backSocket) Close() error {
	s.set.Remove(s)
	return s.socket.Close()
}

func backErr(addr string, err error) error {
	return fmt.Errorf("mux: dial back %s: %w", addr, err)
}

// reserveBack finds the session from addr and counts a stream in its live
// count before the stream exists, so that a listener closed meanwhile
// does not close the session under the open.
func (l *listener) reserveBack(addr string) (*serverSession, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found *serverSession
	live := 0
	for ss := range l.sessions {
		if ss.remote != addr {
			continue
		}
		if !ss.sess.IsClosed() {
			found = ss // a dead one may linger; a live one wins
			live++
		} else if found == nil {
			found = ss
		}
	}
	switch {
	case live > 1:
		// Unix clients are unnamed, so share "unix:": a stream to any
		// of them could reach another caller than the one meant.
		return nil, fmt.Errorf("mux: dial back %s: %d sessions come from that address, which names none of them "+
			"(the clients of a unix socket are unnamed): %w", addr, live, transport.ErrConnectionRefused)
	case found == nil && l.ended != nil && addr == l.remote:
		// NewServerConn's one session, which has ended and been forgotten.
		return nil, backErr(addr, ErrSessionClosed)
	case found == nil:
		return nil, fmt.Errorf("mux: dial back %s: no session from %s: %w", addr, addr, transport.ErrConnectionRefused)
	case found.sess.IsClosed(), l.closed && found.live == 0:
		// The second: a closed listener's idle session is closed, or
		// about to be.
		return nil, backErr(addr, ErrSessionClosed)
	}
	found.live++
	return found, nil
}

// backOwner is the owner of the streams Back opens on a session: their
// close releases their count in live, which the listener's Close waits
// for as it does for accepted streams, and their token in backSlots, not
// in slots, which bound the streams the peer opens.
type backOwner struct{ ss *serverSession }

func (o backOwner) streamClosed() { o.ss.release(o.ss.backSlots) }

// openBack opens a stream towards the peer, the live count already taken
// (reserveBack); on failure it gives that back.
func (ss *serverSession) openBack(ctx context.Context) (*streamConn, error) {
	if ss.backSlots != nil {
		select {
		case ss.backSlots <- struct{}{}:
		case <-ctx.Done():
			ss.release(nil)
			return nil, ctx.Err()
		case <-ss.sess.CloseChan():
			ss.release(nil)
			return nil, ErrSessionClosed
		}
	}
	// The goroutine openStream may leave behind is not the listener's to
	// wait for: it ends when OpenStream does, at the latest when the
	// session closes, which Close sees to.
	st, err := openStream(ctx, ss.sess, func(fn func()) bool { go fn(); return true })
	if err != nil {
		ss.release(ss.backSlots)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case retireErr(err), ss.tr.isDead():
			return nil, fmt.Errorf("%w: %w", ErrSessionClosed, err)
		}
		return nil, err
	}
	if ss.sess.IsClosed() || ss.tr.isDead() {
		// Died while the stream was opened: the caller must not get it.
		st.Close()
		ss.release(ss.backSlots)
		return nil, ErrSessionClosed
	}
	return newStreamConn(st, backOwner{ss}, ss.tr), nil
}
