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
// its Listener requires one. Each end that claims it is held to it.
func testTLSState(t *testing.T, e *env) {
	e.eachEnd(SocketTLSReporter, func(t *testing.T, e *env, x end) {
		// The claim whose Wire says whether this end is TLS, what reports
		// it, and whether the peer's certificate must be there.
		wire, of, peers := TransportWireReporter, any(e.tr), func(transport.Wire) bool { return true }
		if x.accepted {
			wire, of, peers = ListenerWireReporter, x.l, func(w transport.Wire) bool { return w.ClientCert }
		}
		st, on := as[transport.TLSReporter](t, x.s, SocketTLSReporter).TLS()
		var w transport.Wire
		if e.have.Has(wire) {
			w = as[transport.WireReporter](t, of, wire).Wire()
			assert.Equal(t, w.TLS, on, "the %s Socket's TLS reports %v, its end's Wire %+v", x.name, on, w)
		}
		if !on {
			assert.Zero(t, st.Version, "the %s Socket reports no TLS and a TLS state", x.name)
			return
		}
		assert.True(t, st.HandshakeComplete, "the %s Socket's TLS state: handshake not complete", x.name)
		if peers(w) {
			assert.NotEmpty(t, st.PeerCertificates, "the %s Socket's TLS state has no peer certificate", x.name)
		}
	})
}

// testPeerCred: a transport.PeerCredReporter reports credentials only
// over a unix socket ("unix:" addresses, docs/unix.md), and there, where
// the system reports them, both ends name this process, which holds both.
// Each end that claims it is held to it.
func testPeerCred(t *testing.T, e *env) {
	e.eachEnd(SocketPeerCredReporter, func(t *testing.T, e *env, x end) {
		unix := strings.HasPrefix(x.l.Addr().String(), "unix:")
		cred, ok := as[transport.PeerCredReporter](t, x.s, SocketPeerCredReporter).PeerCred()
		if !ok {
			assert.Zero(t, cred, "the %s Socket reports no credentials and some", x.name)
			return
		}
		assert.True(t, unix, "the %s Socket reports credentials over %s, not a unix socket", x.name, x.l.Addr())
		assert.Equal(t, transport.PeerCred{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getpid()}, cred,
			"the %s Socket's peer is this process", x.name)
	})
}

// testWritten: Unwritten counts what a Socket took and has not written —
// nothing once WaitWritten has returned — and WaitWritten waits until
// every message sent, queued by SendAsync or Queue among them, is written
// (the peer receives them all), and returns after Close. Each end that
// claims either is held to it.
func testWritten(t *testing.T, e *env) {
	e.eachEnd(SocketUnwritten|SocketWaitWritten, func(t *testing.T, e *env, x end) {
		var u unwritten
		if x.has.Has(SocketUnwritten) {
			u = as[unwritten](t, x.s, SocketUnwritten)
			assert.Zero(t, u.Unwritten(), "Unwritten before anything was sent")
			require.NoError(t, x.s.Send(&transport.Message{Body: []byte("sent")}))
			assert.Zero(t, u.Unwritten(), "Unwritten after a Send returned, nothing else sent")
			var m transport.Message
			require.NoError(t, x.peer.Recv(&m))
		}
		if !x.has.Has(SocketWaitWritten) {
			return
		}
		w := as[waitWritten](t, x.s, SocketWaitWritten)
		ways := sendWays(t, x.s, x.has)
		const n = 60
		got := receive(x.peer, n)
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

		require.NoError(t, x.s.Close())
		within(t, waitLong, "WaitWritten after Close", func() { _ = w.WaitWritten(ctx) })
	})
}

// testBuffered: Buffered reports whether the next message has arrived
// whole, never waiting: false with nothing sent or everything received,
// true when a message came in the same write as the one just received
// (two queued together and flushed at once, when the peer is a
// transport.BatchSender). Each end that claims it is held to it.
func testBuffered(t *testing.T, e *env) {
	e.eachEnd(SocketBuffered, func(t *testing.T, e *env, x end) {
		b := as[buffered](t, x.s, SocketBuffered)
		assert.False(t, b.Buffered(), "Buffered before anything was sent")
		var m transport.Message
		require.NoError(t, x.peer.Send(&transport.Message{Body: []byte("one")}))
		require.NoError(t, x.s.Recv(&m))
		assert.False(t, b.Buffered(), "Buffered with every message received")
		if !x.peerHas.Has(SocketBatchSender) {
			return
		}
		bs := as[transport.BatchSender](t, x.peer, SocketBatchSender)
		flush, err := bs.Queue(&transport.Message{Body: []byte("two")})
		require.NoError(t, err)
		require.True(t, flush, "Queue on an idle Socket: its sender is the writer")
		flush, err = bs.Queue(&transport.Message{Body: []byte("three")})
		require.NoError(t, err)
		require.False(t, flush, "a second Queue before the writer's Flush")
		require.NoError(t, bs.Flush(context.Background()))
		require.NoError(t, x.s.Recv(&m))
		require.Equal(t, "two", string(m.Body))
		assert.True(t, b.Buffered(), "Buffered with the next message received in the same write")
		require.NoError(t, x.s.Recv(&m))
		require.Equal(t, "three", string(m.Body))
		assert.False(t, b.Buffered(), "Buffered with every message received")
	})
}
