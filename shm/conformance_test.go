package shm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/shm"
	"github.com/zerodial/transport/transporttest"
)

// abilities are what shm's Transport, Listeners and Sockets have.
const abilities = transporttest.TransportFrameLimiter | transporttest.TransportWireReporter |
	transporttest.ListenerFrameLimiter | transporttest.ListenerClosedReporter | transporttest.ListenerWireReporter |
	transporttest.SocketFrameWaiter | transporttest.SocketPeerCredReporter

// listenAddr returns a unix address whose "*" makes every Listen pick a
// socket file of its own, in a short-named directory removed when t ends.
func listenAddr(t *testing.T) string {
	dir, err := os.MkdirTemp("", "zd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return "unix:" + filepath.Join(dir, "s*.sock")
}

func TestConformance(t *testing.T) {
	skipUnlessLinux(t)
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		return shm.New(), listenAddr(t)
	}, abilities)
}

// TestConformanceSmallRing runs the suite with the smallest ring, so that
// its large messages go through in parts and wrap.
func TestConformanceSmallRing(t *testing.T) {
	skipUnlessLinux(t)
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		return shm.New(shm.WithRingSize(64 << 10)), ""
	}, abilities)
}
