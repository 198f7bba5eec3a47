package tcp_test

import (
	"context"
	"net"
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/conntest"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// TestConformanceNewSocket holds Sockets made by NewSocket, on both ends of
// connections from the net package, to the whole Transport contract.
func TestConformanceNewSocket(t *testing.T) {
	newSocket := func(ctx context.Context, c net.Conn) (transport.Socket, error) { return tcp.NewSocket(ctx, c) }
	transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
		return &conntest.Transport{Name: "tcp.NewSocket", Client: newSocket, Server: newSocket}, "127.0.0.1:0"
	}, transporttest.TransportFrameLimiter|transporttest.AllSocketAbilities)
}
