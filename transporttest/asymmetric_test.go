package transporttest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/transporttest"
)

// A wrapper of the dialling side alone, as client-side middleware is: the
// Sockets tcp dials are wrapped into ones that keep AsyncSender and
// FrameWaiter and nothing else, and its Listeners and the Sockets they
// accept are tcp's own.

// dialOnly makes that wrapper.
func dialOnly() transport.Transport {
	return tcpEnds(func(s fullSocket) transport.Socket {
		return struct {
			transport.Socket
			transport.AsyncSender
			transport.FrameWaiter
		}{s, s, s}
	}, nil)
}

// dialOnlyHas is what it has: tcp's Transport and Listeners, the two
// Socket abilities it keeps on the dialled end, and every Socket ability
// on the accepted end.
const dialOnlyHas = tcpHas&^transporttest.AllSocketAbilities |
	transporttest.SocketAsyncSender | transporttest.SocketFrameWaiter

var dialOnlyClaim = dialOnlyHas | transporttest.Accepted(transporttest.AllSocketAbilities)

// TestCheckAbilitiesOfAWrapperOfOneEnd: a Transport whose ends have
// different Socket abilities passes CheckAbilities with each end claimed
// apart (transporttest.Accepted), and AbilitiesOf states them so.
func TestCheckAbilitiesOfAWrapperOfOneEnd(t *testing.T) {
	require.NoError(t, transporttest.CheckAbilities(closing(t, dialOnly()), "127.0.0.1:0", dialOnlyClaim))
	has, err := transporttest.AbilitiesOf(closing(t, dialOnly()), "127.0.0.1:0")
	require.NoError(t, err)
	assert.Equal(t, dialOnlyClaim, has, "AbilitiesOf: %v", has)
	assert.Equal(t, "TransportFrameLimiter|TransportWireReporter|ListenerFrameLimiter|ListenerClosedReporter|ListenerWireReporter|"+
		"SocketAsyncSender|SocketFrameWaiter|"+
		"Accepted(SocketAsyncSender|SocketBatchSender|SocketFrameWaiter|SocketTLSReporter|SocketUnwritten|SocketWaitWritten|SocketBuffered|SocketPeerCredReporter)",
		has.String())
}

// TestRunPassesAWrapperOfOneEnd: the whole suite passes it with that
// claim, each end's cases holding it to its own.
func TestRunPassesAWrapperOfOneEnd(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) { return dialOnly(), "127.0.0.1:0" }, dialOnlyClaim)
}

// TestCheckAbilitiesNamesTheEnd: a claim false of one end fails, naming
// the interface and the end, and how the claim states it.
func TestCheckAbilitiesNamesTheEnd(t *testing.T) {
	forgotten := []string{"transport.BatchSender", "transport.TLSReporter", "interface{ Unwritten() int64 }",
		"interface{ WaitWritten(context.Context) error }", "interface{ Buffered() bool }", "transport.PeerCredReporter"}

	t.Run("OneClaimForBoth", func(t *testing.T) {
		// What tcp has, claimed of both ends: the dialled end lacks what
		// the wrapper forgot, and the error says to state the ends apart.
		err := transporttest.CheckAbilities(closing(t, dialOnly()), "127.0.0.1:0", tcpHas)
		require.Error(t, err)
		lines := strings.Split(err.Error(), "\n")
		require.Len(t, lines, len(forgotten), "%v", err)
		for i, iface := range forgotten {
			assert.Contains(t, lines[i], "its dialled Socket (struct {")
			assert.Contains(t, lines[i], "does not implement "+iface+", which it claims (transporttest.Socket")
			assert.Contains(t, lines[i], "state theirs apart with transporttest.Accepted")
		}
		t.Log(err)
	})

	t.Run("AcceptedEndUnclaimed", func(t *testing.T) {
		err := transporttest.CheckAbilities(closing(t, dialOnly()), "127.0.0.1:0",
			dialOnlyHas|transporttest.Accepted(transporttest.AllSocketAbilities&^transporttest.SocketBuffered))
		require.Error(t, err)
		assert.Equal(t, "transporttest: tcp: its accepted Socket (*tcp.socket) implements interface{ Buffered() bool }, which it does not claim: "+
			"add transporttest.Accepted(transporttest.SocketBuffered) to the claims", err.Error())
	})

	t.Run("AcceptedEndOverclaimed", func(t *testing.T) {
		// tcp's accepted Sockets, claimed as memory's: FrameWaiter alone.
		err := transporttest.CheckAbilities(closing(t, dialOnly()), "127.0.0.1:0",
			dialOnlyHas|transporttest.Accepted(transporttest.SocketFrameWaiter))
		require.Error(t, err)
		lines := strings.Split(err.Error(), "\n")
		require.Len(t, lines, 7, "%v", err)
		for _, line := range lines {
			assert.Contains(t, line, "its accepted Socket (*tcp.socket) implements ")
			assert.Contains(t, line, "add transporttest.Accepted(transporttest.Socket")
		}
	})

	t.Run("DialledEndOverclaimed", func(t *testing.T) {
		err := transporttest.CheckAbilities(closing(t, dialOnly()), "127.0.0.1:0", dialOnlyClaim|transporttest.SocketTLSReporter)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "its dialled Socket (struct {")
		assert.Contains(t, err.Error(), "does not implement transport.TLSReporter, which it claims (transporttest.SocketTLSReporter)")
		assert.NotContains(t, err.Error(), "\n", "one error: %v", err)
	})

	t.Run("AcceptedNotASocketAbility", func(t *testing.T) {
		err := transporttest.CheckAbilities(closing(t, dialOnly()), "127.0.0.1:0", dialOnlyClaim|transporttest.Accepted(transporttest.ListenerFrameLimiter))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "transporttest.Accepted(ListenerFrameLimiter), which only Socket abilities have")
	})
}

// TestAbilitiesOfEachEnd: a claim that states no Accepted claims its
// Socket abilities of both ends; one that does, its own of the dialled end
// alone.
func TestAbilitiesOfEachEnd(t *testing.T) {
	fw, async := transporttest.SocketFrameWaiter, transporttest.SocketAsyncSender
	both := fw
	assert.True(t, both.Has(fw))
	assert.True(t, both.Has(transporttest.Accepted(fw)), "a claim of both ends has it accepted")
	assert.Equal(t, "SocketFrameWaiter", both.String())

	apart := async | transporttest.Accepted(fw)
	assert.True(t, apart.Has(async))
	assert.False(t, apart.Has(transporttest.Accepted(async)), "the accepted end was claimed apart, without it")
	assert.False(t, apart.Has(fw), "the dialled end was not claimed it")
	assert.True(t, apart.Has(transporttest.Accepted(fw)))
	assert.True(t, apart.Has(transporttest.Accepted(0)))
	assert.Equal(t, "SocketAsyncSender|Accepted(SocketFrameWaiter)", apart.String())
	assert.Equal(t, "dialled Socket transport.AsyncSender, accepted Socket transport.FrameWaiter", apart.Interfaces())

	assert.Equal(t, transporttest.Accepted(fw|async), transporttest.Accepted(fw)|transporttest.Accepted(async))
	assert.Equal(t, "Accepted(none)", transporttest.Accepted(0).String())
	assert.Equal(t, "none", transporttest.Abilities(0).String())
}
