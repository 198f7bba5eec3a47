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

// TestConformance: a Net with no faults wraps memory, tcp and mux into
// Transports that keep the whole contract (transporttest), and so does one
// that delays every frame.
func TestConformance(t *testing.T) {
	for name, mk := range map[string]func() (transport.Transport, string){
		"memory": func() (transport.Transport, string) { return memory.New(), "" },
		"tcp":    func() (transport.Transport, string) { return tcp.New(), "127.0.0.1:0" },
		"mux":    func() (transport.Transport, string) { return mux.New(), "127.0.0.1:0" },
	} {
		t.Run(name, func(t *testing.T) {
			transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
				inner, addr := mk()
				return faultnet.New(1).Wrap(inner, "client"), addr
			})
		})
	}
	// With latency and jitter, the frames are late and the contract still
	// holds: order, ownership, deadlines, Close.
	t.Run("memory-latency", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			n := faultnet.New(1)
			n.Add(faultnet.Rule{Latency: time.Millisecond, Jitter: time.Millisecond})
			return n.Wrap(memory.New(), "client"), ""
		})
	})
}
