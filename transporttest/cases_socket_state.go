package transporttest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// testTLSState: a transport.TLSReporter reports TLS exactly when the
// connection runs over it, as the Wire of its end says when claimed, with
// the handshake done by the time Dial and Accept return: the dialled end
// has the server's certificate, and the accepted end the client's where
// its Listener requires one.
func testTLSState(t *testing.T, e *env) {
	e.need(SocketTLSReporter)
	l := e.listen()
	c, s := e.dial(l)
	ends := []struct {
		name  string
		s     transport.Socket
		wire  Abilities                 // the claim whose Wire says whether this end is TLS
		of    any                       // what reports that Wire
		peers func(transport.Wire) bool // whether the peer's certificate must be there
	}{
		{"dialled", c, TransportWireReporter, e.tr, func(transport.Wire) bool { return true }},
		{"accepted", s, ListenerWireReporter, l, func(w transport.Wire) bool { return w.ClientCert }},
	}
	for _, end := range ends {
		st, on := as[transport.TLSReporter](t, end.s, SocketTLSReporter).TLS()
		var w transport.Wire
		if e.have.Has(end.wire) {
			w = as[transport.WireReporter](t, end.of, end.wire).Wire()
			assert.Equal(t, w.TLS, on, "the %s Socket's TLS reports %v, its end's Wire %+v", end.name, on, w)
		}
		if !on {
			assert.Zero(t, st.Version, "the %s Socket reports no TLS and a TLS state", end.name)
			continue
		}
		assert.True(t, st.HandshakeComplete, "the %s Socket's TLS state: handshake not complete", end.name)
		if end.peers(w) {
			assert.NotEmpty(t, st.PeerCertificates, "the %s Socket's TLS state has no peer certificate", end.name)
		}
	}
}

// testPeerCred: a transport.PeerCredReporter reports credentials only
// over a unix socket ("unix:" addresses, docs/unix.md), and there, where
// the system reports them, both ends name this process, which holds both.
func testPeerCred(t *testing.T, e *env) {
	e.need(SocketPeerCredReporter)
	l := e.listen()
	c, s := e.dial(l)
	unix := strings.HasPrefix(l.Addr().String(), "unix:")
	for name, end := range map[string]transport.Socket{"dialled": c, "accepted": s} {
		cred, ok := as[transport.PeerCredReporter](t, end, SocketPeerCredReporter).PeerCred()
		if !ok {
			assert.Zero(t, cred, "the %s Socket reports no credentials and some", name)
			continue
		}
		assert.True(t, unix, "the %s Socket reports credentials over %s, not a unix socket", name, l.Addr())
		assert.Equal(t, transport.PeerCred{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getpid()}, cred,
			"the %s Socket's peer is this process", name)
	}
}

// testWritten: Unwritten counts what a Socket took and has not written —
// nothing once WaitWritten has returned — and WaitWritten waits until
// every message sent, queued by SendAsync or Queue among them, is written
// (the peer receives them all), and returns after Close.
func testWritten(t *testing.T, e *env) {
	if !e.have.Has(SocketUnwritten) && !e.have.Has(SocketWaitWritten) {
		t.Skipf("the Transport claims neither %v nor %v", SocketUnwritten, SocketWaitWritten)
	}
	l := e.listen()
	c, s := e.dial(l)
	var u unwritten
	if e.have.Has(SocketUnwritten) {
		u = as[unwritten](t, c, SocketUnwritten)
		assert.Zero(t, u.Unwritten(), "Unwritten before anything was sent")
		require.NoError(t, c.Send(&transport.Message{Body: []byte("sent")}))
		assert.Zero(t, u.Unwritten(), "Unwritten after a Send returned, nothing else sent")
		var m transport.Message
		require.NoError(t, s.Recv(&m))
	}
	if !e.have.Has(SocketWaitWritten) {
		return
	}
	w := as[waitWritten](t, c, SocketWaitWritten)
	ways := e.sendWays(t, c)
	const n = 60
	got := receive(s, n)
	for i := range n {
		require.NoError(t, ways[i%len(ways)].send(numbered(1, i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	require.NoError(t, w.WaitWritten(ctx), "WaitWritten")
	if u != nil {
		assert.Zero(t, u.Unwritten(), "Unwritten after WaitWritten returned")
	}
	var msgs []*transport.Message
	within(t, waitLong, "receiving what WaitWritten waited for", func() { msgs = <-got })
	require.Len(t, msgs, n)
	for i, m := range msgs {
		requireNumbered(t, m, 1, i)
	}

	require.NoError(t, c.Close())
	within(t, waitLong, "WaitWritten after Close", func() { _ = w.WaitWritten(ctx) })
}

// testBuffered: Buffered reports whether the next message has arrived
// whole, never waiting: false with nothing sent or everything received,
// true when a message came in the same write as the one just received
// (two queued together and flushed at once, when the dialled end is a
// transport.BatchSender).
func testBuffered(t *testing.T, e *env) {
	e.need(SocketBuffered)
	l := e.listen()
	c, s := e.dial(l)
	b := as[buffered](t, s, SocketBuffered)
	assert.False(t, b.Buffered(), "Buffered before anything was sent")
	var m transport.Message
	require.NoError(t, c.Send(&transport.Message{Body: []byte("one")}))
	require.NoError(t, s.Recv(&m))
	assert.False(t, b.Buffered(), "Buffered with every message received")
	if !e.have.Has(SocketBatchSender) {
		return
	}
	bs := as[transport.BatchSender](t, c, SocketBatchSender)
	flush, err := bs.Queue(&transport.Message{Body: []byte("two")})
	require.NoError(t, err)
	require.True(t, flush, "Queue on an idle Socket: its sender is the writer")
	flush, err = bs.Queue(&transport.Message{Body: []byte("three")})
	require.NoError(t, err)
	require.False(t, flush, "a second Queue before the writer's Flush")
	require.NoError(t, bs.Flush(context.Background()))
	require.NoError(t, s.Recv(&m))
	require.Equal(t, "two", string(m.Body))
	assert.True(t, b.Buffered(), "Buffered with the next message received in the same write")
	require.NoError(t, s.Recv(&m))
	require.Equal(t, "three", string(m.Body))
	assert.False(t, b.Buffered(), "Buffered with every message received")
}
