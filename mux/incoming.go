package mux

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
)

// Incoming returns the Listener of the streams peers open on the sessions
// this Transport dialled, all of them, whatever their remote address: a
// listener's end opens them with Back, to call this end over the
// connection this end made, which is how a server reaches a client behind
// NAT or a firewall. Serve it (dispatch.Server.Serve or Start) to answer
// those calls; a stream's RemoteAddr is its session's remote address.
//
// Every call returns the same Listener. Its Addr has Network "mux" and
// String "incoming", since it binds nothing; it reports no transport.Wire,
// so dispatch's in-process shortcut never stands in for it. Its Close
// makes Accept fail with transport.ErrClosed and closes the streams not yet
// accepted, and the ones opened later at once; streams already accepted
// stay open, and the sessions, which are this Transport's Dials' too, are
// not affected. Transport.Close closes it.
//
// Until Incoming is called, and once its Listener is closed, a stream a
// peer opens is acknowledged and closed at once, so that the peer learns
// promptly that this end serves nothing: its Send fails or its Recv sees
// the end of the stream, and a dispatch Client's call over it fails with
// an error matching dispatch.ErrShutdown ("the server closed the
// connection") rather than waiting. Streams the peer opens are bounded by
// the stream limit (WithStreamLimit) apart from the streams this end dials:
// past it, the session takes no more from the peer until one of them
// closes.
func (t *Transport) Incoming() transport.Listener {
	t.mu.Lock()
	in := t.incoming
	made := in == nil
	if made {
		in = newIncoming(t)
		t.incoming = in
	}
	closed := t.closed
	t.mu.Unlock()
	if made && closed {
		in.Close() // Transport.Close has run: nothing will come
	}
	return in
}

// incoming is the Listener Transport.Incoming returns. Streams reach it
// from the sessions' accept loops (clientSession.acceptStreams).
type incoming struct {
	t *Transport // for the sockets' options
	// queue holds streams taken from their sessions and not yet returned
	// by Accept.
	queue chan *streamConn
	done  chan struct{} // closed by Close
	// closed is set before done is closed, and read where a select cannot
	// be.
	closed    atomic.Bool
	closeOnce sync.Once
}

var (
	_ transport.Listener       = (*incoming)(nil)
	_ transport.FrameLimiter   = (*incoming)(nil)
	_ transport.ClosedReporter = (*incoming)(nil)
)

func newIncoming(t *Transport) *incoming {
	return &incoming{
		t:     t,
		queue: make(chan *streamConn, t.cfg.yamux.AcceptBacklog),
		done:  make(chan struct{}),
	}
}

// Accept returns the next stream a peer opened on one of the Transport's
// sessions.
func (in *incoming) Accept() (transport.Socket, error) {
	select {
	case c := <-in.queue:
		if in.closed.Load() {
			c.Close()
			return nil, transport.ErrClosed
		}
		return newSocket(c, in.t.cfg.Common), nil
	case <-in.done:
		return nil, transport.ErrClosed
	}
}

// Close stops handing out streams: Accept fails with transport.ErrClosed,
// and the streams not yet accepted are closed, as are those peers open
// from now on. Streams already accepted stay open.
func (in *incoming) Close() error {
	in.closeOnce.Do(func() {
		in.closed.Store(true)
		close(in.done)
	})
	for {
		select {
		case c := <-in.queue:
			c.Close()
		default:
			return nil
		}
	}
}

// Addr returns incomingAddr: the Listener binds no address of its own.
func (in *incoming) Addr() net.Addr { return incomingAddr{} }

// MaxFrameSize returns the largest message the streams carry.
func (in *incoming) MaxFrameSize() int { return in.t.cfg.MaxFrameSize }

// Closed reports whether Close has been called (transport.ClosedReporter).
func (in *incoming) Closed() bool { return in.closed.Load() }

// enqueue queues c for Accept, or closes it if the Listener closes first.
func (in *incoming) enqueue(c *streamConn) {
	select {
	case in.queue <- c:
		if in.closed.Load() {
			// Close may have emptied the queue before c went in: each late
			// arrival takes one stream back out, so none is stranded
			// (as listener.enqueue does).
			select {
			case late := <-in.queue:
				late.Close()
			default:
			}
		}
	case <-in.done:
		c.Close()
	}
}

// incomingAddr is the Addr of Incoming's Listener.
type incomingAddr struct{}

func (incomingAddr) Network() string { return "mux" }
func (incomingAddr) String() string  { return "incoming" }

// incomingOwner is the owner of the streams a client session's peer opened:
// their close releases their count in the session's live, which keeps a
// retired session open while they are, and their token in inSlots, not in
// slots, which bound this end's own Dials.
type incomingOwner struct{ cs *clientSession }

func (o incomingOwner) streamClosed() { o.cs.release(o.cs.inSlots) }

// acceptStreams takes the streams the peer opens on the session until the
// session ends, and hands each to the Transport's Incoming listener, or
// closes it at once when there is none or it is closed. Taking every
// stream, served or not, matters: yamux acknowledges a stream only when it
// is accepted, and a stream never acknowledged leaves the opener waiting
// (or, with a stream open timeout, ends its session).
func (cs *clientSession) acceptStreams() {
	for {
		slot := false
		if cs.inSlots != nil {
			select {
			case cs.inSlots <- struct{}{}:
				slot = true
			case <-cs.sess.CloseChan():
				return
			}
		}
		st, err := cs.sess.AcceptStream()
		if err != nil {
			if slot {
				<-cs.inSlots
			}
			if cs.sess.IsClosed() {
				return
			}
			// The acknowledgement failed to go out, which ends the session
			// soon; until it does, take what else comes. Each failure
			// consumed a stream, so this does not spin.
			continue
		}
		t := cs.t
		t.mu.Lock()
		in := t.incoming
		// A retired session without streams is being closed: a stream of
		// it would fail at once anyway.
		take := in != nil && !in.closed.Load() && !t.closed && (!cs.retired || cs.live > 0)
		if take {
			cs.live++
		}
		t.mu.Unlock()
		if !take {
			st.Close()
			if slot {
				<-cs.inSlots
			}
			continue
		}
		// Its token, if any, goes back when it closes (incomingOwner).
		in.enqueue(newStreamConn(st, incomingOwner{cs}, cs.tr))
	}
}
