package transport_test

import (
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/transporttest"
)

func TestConformanceMux(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		return mux.New(), "127.0.0.1:0" // Run closes it when the case ends
	}, muxAbilities)
}

func TestConformanceMuxTLS(t *testing.T) {
	cfg := mutualTLS(t)
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		return mux.New(mux.WithTLS(cfg)), "127.0.0.1:0"
	}, muxAbilities)
}
