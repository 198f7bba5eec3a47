package faultnet_test

import (
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/faultnet"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// What a faultnet Transport has (transporttest.Abilities): the wrapped
// transport's frame limit, and none of its Wire or address space, which
// would let dispatch's shortcut bypass the faults; the Sockets it dials
// are its own, which queue what they send and wait for frames, and pass
// TLS state and a unix peer's credentials on; its Listeners, and the Sockets they accept, are the
// wrapped transport's, with every ability they have — the accepted end's
// stated apart (transporttest.Accepted).
const faultnetHas = transporttest.TransportFrameLimiter |
	transporttest.SocketAsyncSender | transporttest.SocketFrameWaiter | transporttest.SocketTLSReporter |
	transporttest.SocketPeerCredReporter

// What a faultnet Transport has over memory, tcp and mux: their Listeners'
// abilities, and their Sockets' on the accepted end.
var (
	overMemory = faultnetHas |
		transporttest.ListenerFrameLimiter | transporttest.ListenerClosedReporter | transporttest.ListenerWireReporter |
		transporttest.ListenerAddrSpacer |
		transporttest.Accepted(transporttest.SocketFrameWaiter)
	overTCP = faultnetHas |
		transporttest.ListenerFrameLimiter | transporttest.ListenerClosedReporter | transporttest.ListenerWireReporter |
		transporttest.Accepted(transporttest.AllSocketAbilities)
	overMux = faultnetHas |
		transporttest.ListenerFrameLimiter | transporttest.ListenerClosedReporter | transporttest.ListenerWireReporter |
		transporttest.Accepted(transporttest.AllSocketAbilities&^transporttest.SocketFrameWaiter)
)

// TestConformance: a Net with no faults wraps memory, tcp and mux into
// Transports that keep the whole contract (transporttest), each claiming
// exactly what it has, and so does one that delays every frame.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		mk   func() (transport.Transport, string)
		has  transporttest.Abilities
	}{
		{"memory", func() (transport.Transport, string) { return memory.New(), "" }, overMemory},
		{"tcp", func() (transport.Transport, string) { return tcp.New(), "127.0.0.1:0" }, overTCP},
		{"mux", func() (transport.Transport, string) { return mux.New(), "127.0.0.1:0" }, overMux},
	} {
		t.Run(c.name, func(t *testing.T) {
			transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
				inner, addr := c.mk()
				return faultnet.New(1).Wrap(inner, "client"), addr
			}, c.has)
		})
	}
	// With latency and jitter, the frames are late and the contract still
	// holds: order, ownership, deadlines, Close.
	t.Run("memory-latency", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			n := faultnet.New(1)
			n.Add(faultnet.Rule{Latency: time.Millisecond, Jitter: time.Millisecond})
			return n.Wrap(memory.New(), "client"), ""
		}, overMemory)
	})
}
