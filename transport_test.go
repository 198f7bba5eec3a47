package transport_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			return memory.New(), ""
		})
	})
	t.Run("tcp", func(t *testing.T) {
		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
			return tcp.New(), "127.0.0.1:0"
		})
	})
}
