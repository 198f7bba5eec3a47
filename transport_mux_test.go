package transport_test

import (
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/transporttest"
)

func TestConformanceMux(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		tr := mux.New()
		// Registered here, after the suite's leak check and before the
		// case's own cleanups, so it runs after the case has closed its
		// sockets and listeners and before goroutines are counted.
		t.Cleanup(func() { tr.Close() })
		return tr, "127.0.0.1:0"
	})
}
