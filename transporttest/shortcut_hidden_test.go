package transporttest_test

import (
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/transporttest"
)

// TestRunPassesAWrapperThatHidesTheShortcut: a memory wrapper that hides
// its Transport's Wire and address space on purpose, as a fault injector
// does so that dispatch's shortcut never bypasses it, and keeps memory's
// Listeners, whose addresses name memory's space: its Clients never look
// for Servers in any space, so the suite passes it with that true claim.
func TestRunPassesAWrapperThatHidesTheShortcut(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		m := memory.New()
		return struct {
			transport.Transport
			transport.FrameLimiter
		}{m, m}, ""
	}, memoryHas&^(transporttest.TransportAddrSpacer|transporttest.TransportWireReporter))
}
