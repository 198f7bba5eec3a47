package transporttest

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

// The abilities of this file are what dispatch's in-process shortcut
// decides by: whether a Server of this process may be called directly in
// place of a Dial (Wire, AddrSpace, ClosedReporter) and the limit it then
// holds the call to (a Listener's FrameLimiter). Each case holds the
// claim to what the network does, since a shortcut that believes a wrong
// one calls what the network would not reach, or refuses what it would.

// testListenerFrameLimit: a Listener's limit is what its accepted Sockets
// enforce: a message over it fails Send with ErrFrameTooLarge and sends
// nothing, and one at it arrives (when the Transport's own limit lets the
// dialled end receive it).
func testListenerFrameLimit(t *testing.T, e *env) {
	e.need(ListenerFrameLimiter)
	l := e.listen()
	limit := as[transport.FrameLimiter](t, l, ListenerFrameLimiter).MaxFrameSize()
	require.Positive(t, limit, "the Listener's MaxFrameSize")
	c, s := e.dial(l)
	require.ErrorIs(t, s.Send(&transport.Message{Body: make([]byte, limit+1)}), transport.ErrFrameTooLarge,
		"a message over the Listener's MaxFrameSize, from an accepted Socket")
	if trLimit, ok := e.maxFrame(); !ok || trLimit < limit {
		return
	}
	h := map[string]string{"at": "limit"}
	at := &transport.Message{Header: h, Body: allBytes(limit - frame.HeaderLen(h))}
	sent := make(chan error, 1)
	go func() { sent <- s.Send(at) }()
	var m transport.Message
	require.NoError(t, c.Recv(&m))
	require.NoError(t, <-sent, "a message of exactly the Listener's MaxFrameSize")
	requireSame(t, at, &m)
}

// testClosedReporter: a Listener's Closed reports false while it is open
// and true as soon as its Close has returned, for good.
func testClosedReporter(t *testing.T, e *env) {
	e.need(ListenerClosedReporter)
	l, err := e.tr.Listen(e.addr)
	require.NoError(t, err)
	cr := as[transport.ClosedReporter](t, l, ListenerClosedReporter)
	assert.False(t, cr.Closed(), "Closed before Close")
	e.echo(l)
	c := e.dialTo(l.Addr().String())
	requireSame(t, &transport.Message{Body: []byte("open")}, roundTrip(t, c, &transport.Message{Body: []byte("open")}))
	assert.False(t, cr.Closed(), "Closed while serving")
	require.NoError(t, l.Close())
	assert.True(t, cr.Closed(), "Closed after Close")
	l.Close()
	assert.True(t, cr.Closed(), "Closed after a second Close")
}

// testWire: the Wires a Transport and its Listener report agree with what
// the network does: the Transport dialled the Listener, so the Listener's
// Wire must accept the Transport's (else the shortcut refuses a call the
// network carries), and one that says TLS must be over TLS (else the
// shortcut accepts a client the handshake would refuse) — the TLSState
// case checks the Sockets against it.
func testWire(t *testing.T, e *env) {
	if !e.have.Has(TransportWireReporter) && !e.have.Has(ListenerWireReporter) {
		t.Skipf("the Transport claims neither %v nor %v", TransportWireReporter, ListenerWireReporter)
	}
	l := e.listen()
	e.dial(l)
	var tw, lw transport.Wire
	if e.have.Has(TransportWireReporter) {
		tw = as[transport.WireReporter](t, e.tr, TransportWireReporter).Wire()
		assert.NotEmpty(t, tw.Protocol, "the Transport reports a Wire of no protocol, which the shortcut never takes: report none")
	}
	if e.have.Has(ListenerWireReporter) {
		lw = as[transport.WireReporter](t, l, ListenerWireReporter).Wire()
		assert.NotEmpty(t, lw.Protocol, "the Listener reports a Wire of no protocol, which the shortcut never takes: report none")
	}
	if e.have.Has(TransportWireReporter | ListenerWireReporter) {
		assert.True(t, lw.Accepts(tw), "the Listener's Wire %+v does not accept the Transport's %+v, whose Dial it accepted: the in-process shortcut refuses what the network carries", lw, tw)
	}
}

// testAddrSpace: an address names one place for every Transport of its
// space, which is what dispatch's shortcut files Servers by. A Transport
// that claims no space (the host's network) has its Listeners reached by
// every Transport of its kind; one that claims a space of its own names
// the same space on its Listeners' addresses, and another Transport of
// another space reaches its own Listener at the same address, never this
// one. A Transport that claims neither a space nor a Wire, whose Clients
// never take the shortcut (a fault injector hides both on purpose), may
// keep the space its Listeners' addresses name, the wrapped transport's,
// since its Clients look for Servers in no space at all; it reaches its
// Listener at its address.
func testAddrSpace(t *testing.T, e *env) {
	l := e.listen()
	addr := l.Addr().String()
	Serve(t, l, tagged("first"))
	if !e.have.Has(TransportAddrSpacer) && !e.have.Has(TransportWireReporter) && e.have.Has(ListenerAddrSpacer) {
		// Its Clients never take the shortcut: no space of theirs is to
		// agree with its Listeners'. The Listener's is still one that
		// files Servers, and the Transport reaches the Listener by its
		// address.
		lspace := as[transport.AddrSpacer](t, l.Addr(), ListenerAddrSpacer).AddrSpace()
		require.NotNil(t, lspace, "the Listener's address's AddrSpace")
		require.True(t, reflect.TypeOf(lspace).Comparable(), "the Listener's address's AddrSpace, a %T, is not comparable", lspace)
		require.Equal(t, "first", dialTag(e.tr, addr), "the Transport reaches its own Listener")
		return
	}
	other, _ := e.mk(t)
	t.Cleanup(func() { other.Close() })

	if !e.have.Has(TransportAddrSpacer) {
		require.False(t, e.have.Has(ListenerAddrSpacer),
			"the Transport claims %v without %v: its Clients look for Servers in the host's space, where its Listeners are never filed", ListenerAddrSpacer, TransportAddrSpacer)
		// The host's space: any Transport reaches the Listener.
		require.Equal(t, "first", dialTag(other, addr),
			"another Transport dialled %s and did not reach the Listener there; it claims no address space of its own (%v), so the in-process shortcut would call a Server the network does not reach", addr, TransportAddrSpacer)
		return
	}
	require.True(t, e.have.Has(ListenerAddrSpacer),
		"the Transport claims %v without %v: its Clients look for Servers in a space its Listeners are not filed in", TransportAddrSpacer, ListenerAddrSpacer)
	space := as[transport.AddrSpacer](t, e.tr, TransportAddrSpacer).AddrSpace()
	require.NotNil(t, space, "the Transport's AddrSpace")
	require.True(t, reflect.TypeOf(space).Comparable(), "the Transport's AddrSpace, a %T, is not comparable", space)
	lspace := as[transport.AddrSpacer](t, l.Addr(), ListenerAddrSpacer).AddrSpace()
	require.True(t, reflect.TypeOf(lspace).Comparable(), "the Listener's address's AddrSpace, a %T, is not comparable", lspace)
	require.True(t, space == lspace, "the Listener's address names the space %v, its Transport %v", lspace, space)
	require.Equal(t, "first", dialTag(e.tr, addr), "the Transport reaches its own Listener")

	ospace := as[transport.AddrSpacer](t, other, TransportAddrSpacer).AddrSpace()
	if ospace == space {
		require.Equal(t, "first", dialTag(other, addr), "another Transport of the same space does not reach the Listener")
		return
	}
	// Another space: the address is free there, and names another place.
	ol, err := other.Listen(addr)
	require.NoError(t, err, "another address space has %s taken", addr)
	Serve(t, ol, tagged("second"))
	require.Equal(t, "second", dialTag(other, addr), "another space's Transport reached another space's Listener")
	require.Equal(t, "first", dialTag(e.tr, addr), "the Transport reached another space's Listener")
}

// tagged returns a handler that sends tag, then echoes.
func tagged(tag string) func(transport.Socket) {
	return func(s transport.Socket) {
		if s.Send(&transport.Message{Body: []byte(tag)}) == nil {
			Echo(s)
		}
	}
}

// dialTag dials addr with tr and returns the tag the Listener there sends
// first, or what failed.
func dialTag(tr transport.Transport, addr string) string {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := tr.Dial(ctx, addr)
	if err != nil {
		return "(Dial failed: " + err.Error() + ")"
	}
	defer c.Close()
	var m transport.Message
	if err := c.Recv(&m); err != nil {
		return "(Recv failed: " + err.Error() + ")"
	}
	return string(m.Body)
}
