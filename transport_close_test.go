package transport_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// TestTransportClose: every transport has Close, in transport.Transport,
// with one meaning — before, memory had none and tcp's and mux's were
// found by a type assertion: the sockets it dialled are closed (mux's
// fail with an error matching transport.ErrClosed, as tcp's and memory's
// do, where mux's matched ErrSessionClosed alone), their peers see the
// connection end, later Dials fail with transport.ErrClosed, and its
// listeners serve on. The conformance suite's TransportClose case holds
// every transport to it; this one runs the three side by side.
func TestTransportClose(t *testing.T) {
	for _, c := range []struct {
		mk   func() transport.Transport
		addr string
	}{
		{func() transport.Transport { return memory.New() }, ""},
		{func() transport.Transport { return tcp.New() }, "127.0.0.1:0"},
		{func() transport.Transport { return mux.New() }, "127.0.0.1:0"},
	} {
		tr := c.mk()
		t.Run(tr.String(), func(t *testing.T) {
			defer tr.Close()
			l, err := tr.Listen(c.addr)
			require.NoError(t, err)
			defer l.Close()
			accepted := make(chan transport.Socket, 4)
			go func() {
				for {
					s, err := l.Accept()
					if err != nil {
						close(accepted)
						return
					}
					accepted <- s
				}
			}()
			defer func() {
				l.Close()
				for s := range accepted {
					s.Close()
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := tr.Dial(ctx, l.Addr().String())
			require.NoError(t, err)
			defer s.Close()
			require.NoError(t, s.Send(&transport.Message{Body: []byte("x")}))
			// The peer is the accepted end, which has what was sent: a
			// mux stream its listener had not yet taken would be
			// dropped by the Close, and never accepted.
			var peer transport.Socket
			select {
			case peer = <-accepted:
			case <-ctx.Done():
				t.Fatal("the dialled socket was not accepted")
			}
			var m transport.Message
			require.NoError(t, peer.Recv(&m))
			peerErr := make(chan error, 1)
			go func() { peerErr <- peer.Recv(&m) }()

			require.NoError(t, tr.Close())
			err = s.Recv(&transport.Message{})
			assert.ErrorIs(t, err, transport.ErrClosed, "the dialled socket")
			if tr.String() == "mux" {
				assert.ErrorIs(t, err, mux.ErrSessionClosed, "a mux stream says its session is closed")
			}
			select {
			case err := <-peerErr:
				assert.Error(t, err, "the accepted end's Recv")
			case <-ctx.Done():
				t.Fatal("the accepted end did not see the connection end")
			}
			_, err = tr.Dial(ctx, l.Addr().String())
			assert.ErrorIs(t, err, transport.ErrClosed)
			assert.NoError(t, tr.Close(), "Close again")

			if tr.String() == "memory" {
				return // its listener is reachable through tr alone
			}
			other := c.mk()
			defer other.Close()
			s2, err := other.Dial(ctx, l.Addr().String())
			require.NoError(t, err, "the listener serves on")
			s2.Close()
		})
	}
}
