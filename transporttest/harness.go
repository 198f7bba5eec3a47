package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
)

// MakeTransport returns a fresh Transport for one case and the address to
// listen on ("" or "127.0.0.1:0", say). Run closes the Transport when the
// case ends; anything else it starts must stop by then, through t.Cleanup.
// A case may call it again for a second Transport (TransportClose does).
type MakeTransport func(t *testing.T) (tr transport.Transport, listenAddr string)

// Run runs every case of the suite against the transports mk makes, which
// claim the abilities have: the optional interfaces their Transport,
// Listeners, addresses and Sockets implement (see Abilities). The first
// case, Abilities, fails naming each one claimed and missing, or present
// and not claimed (CheckAbilities); the cases after it hold each ability
// claimed to its contract, and skip those not claimed.
func Run(t *testing.T, mk MakeTransport, have Abilities) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Registered first, so it runs after every other cleanup.
			opt := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, opt) })
			tr, addr := mk(t)
			// Registered before the case's own cleanups, so that it runs
			// after they have closed its sockets and listeners, and
			// before goroutines are counted.
			t.Cleanup(func() { tr.Close() })
			c.fn(t, &env{t: t, tr: tr, addr: addr, mk: mk, have: have})
		})
	}
}

// waitLong bounds how long anything that must happen may take: generous,
// since the machine may be loaded (a second, as it was, a loaded machine
// running the race detector need not keep); only a failing case waits
// that long.
const waitLong = 20 * time.Second

// belowHandshake tells a Dial that was refused, or returned at its
// context's end, from one that waited for the handshake timeout
// (transport.DefaultHandshakeTimeout, 10 s) or for ever, by a margin no
// loaded machine eats.
const belowHandshake = transport.DefaultHandshakeTimeout / 2

type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

var cases = []testCase{
	{"Abilities", testAbilities},
	{"Echo", testEcho},
	{"SendCopies", testSendCopies},
	{"RecvReusesMessage", testRecvReusesMessage},
	{"Addrs", testAddrs},
	{"ManySockets", testManySockets},
	{"ConcurrentSenders", testConcurrentSenders},
	{"CloseUnblocksRecv", testCloseUnblocksRecv},
	{"CloseUnblocksSend", testCloseUnblocksSend},
	{"PeerCloseDrains", testPeerCloseDrains},
	{"ReadDeadline", testReadDeadline},
	{"FrameWaiter", testFrameWaiter},
	{"WriteDeadlinePast", testWriteDeadlinePast},
	{"ListenerClose", testListenerClose},
	{"AcceptedOutlivesListener", testAcceptedOutlivesListener},
	{"ListenAddrInUse", testListenAddrInUse},
	{"DialRefused", testDialRefused},
	{"DialNoAccept", testDialNoAccept},
	{"DialCanceled", testDialCanceled},
	{"FrameTooLarge", testFrameTooLarge},
	{"TransportClose", testTransportClose},
	{"SendOrder", testSendOrder},
	{"AsyncSender", testAsyncSender},
	{"BatchSender", testBatchSender},
	{"ListenerFrameLimit", testListenerFrameLimit},
	{"ClosedReporter", testClosedReporter},
	{"Wire", testWire},
	{"AddrSpace", testAddrSpace},
	{"TLSState", testTLSState},
	{"Written", testWritten},
	{"Buffered", testBuffered},
	{"PeerCred", testPeerCred},
}

type env struct {
	t    *testing.T
	tr   transport.Transport
	addr string
	mk   MakeTransport // for a second Transport
	have Abilities     // what the Transport claims
}

// listen starts a listener that is closed when the case ends.
func (e *env) listen() transport.Listener {
	l, err := e.tr.Listen(e.addr)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { l.Close() })
	return l
}

// dial connects to l and returns both ends; both are closed when the case
// ends.
func (e *env) dial(l transport.Listener) (client, server transport.Socket) {
	type accepted struct {
		s   transport.Socket
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		s, err := l.Accept()
		ch <- accepted{s, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.tr.Dial(ctx, l.Addr().String())
	require.NoError(e.t, err)
	e.t.Cleanup(func() { c.Close() })
	a := <-ch
	require.NoError(e.t, a.err)
	e.t.Cleanup(func() { a.s.Close() })
	return c, a.s
}

// echo serves l with ServeEcho until the case ends.
func (e *env) echo(l transport.Listener) { ServeEcho(e.t, l) }

// dialTo dials addr with a bounded context; the socket is closed when the
// case ends.
func (e *env) dialTo(addr string) transport.Socket {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.tr.Dial(ctx, addr)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { c.Close() })
	return c
}

// within runs fn in a goroutine and fails the case if it has not returned
// after d.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// need skips the case unless the Transport claims every ability of a.
func (e *env) need(a Abilities) {
	e.t.Helper()
	if !e.have.Has(a) {
		e.t.Skipf("the Transport does not claim %v (%s)", a&^e.have, (a &^ e.have).Interfaces())
	}
}

// end is one end of a connection a case dialled, for a Socket ability
// that each end is held to by its own claim (see Accepted).
type end struct {
	name         string // "dialled" or "accepted"
	accepted     bool
	l            transport.Listener // the Listener the connection was dialled to
	s, peer      transport.Socket   // this end's Socket and the other end's
	has, peerHas Abilities          // what is claimed as seen from each (Abilities.end)
}

// pick returns, of the two ends c (dialled) and s (accepted) of another
// connection, the one at x's end.
func (x end) pick(c, s transport.Socket) transport.Socket {
	if x.accepted {
		return s
	}
	return c
}

// eachEnd runs fn, as a subtest named after the end, for each end of a
// connection — dialled, then accepted — whose claim has any ability of a,
// on a connection of its own; it skips the case if neither end's has.
func (e *env) eachEnd(a Abilities, fn func(t *testing.T, e *env, x end)) {
	e.t.Helper()
	ran := false
	for _, accepted := range []bool{false, true} {
		has := e.have.end(accepted)
		if has&a == 0 {
			continue
		}
		ran = true
		x := end{name: "dialled", accepted: accepted, has: has, peerHas: e.have.end(!accepted)}
		if accepted {
			x.name = "accepted"
		}
		e.t.Run(x.name, func(t *testing.T) {
			sub := *e
			sub.t = t
			x.l = sub.listen()
			c, s := sub.dial(x.l)
			x.s, x.peer = c, s
			if accepted {
				x.s, x.peer = s, c
			}
			fn(t, &sub, x)
		})
	}
	if !ran {
		e.t.Skipf("neither end's Sockets are claimed to have any of %v (%s)", a, a.Interfaces())
	}
}

// as returns v as a T, the interface of ability a, or fails the case
// naming it: a Transport that claims a must have it (the Abilities case
// says so too, for every end at once).
func as[T any](t *testing.T, v any, a Abilities) T {
	t.Helper()
	x, ok := v.(T)
	if !ok {
		t.Fatalf("%T does not implement %s, which the Transport claims (%v)", v, a.Interfaces(), a)
	}
	return x
}

// maxFrame returns the Transport's frame limit, when it claims one.
func (e *env) maxFrame() (int, bool) {
	if !e.have.Has(TransportFrameLimiter) {
		return 0, false
	}
	return as[transport.FrameLimiter](e.t, e.tr, TransportFrameLimiter).MaxFrameSize(), true
}
