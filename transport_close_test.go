package transport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// closingTransport is the shape of the network transports: a Transport
// with Close.
type closingTransport interface {
	transport.Transport
	Close() error
}

// TestTransportClose: tcp's Transport has mux's Close — before, it had
// none ("tcpTr.Close undefined") — with its meaning: the sockets it
// dialled are closed, later Dials fail with transport.ErrClosed, and its
// listeners serve on.
func TestTransportClose(t *testing.T) {
	for _, mk := range []func() closingTransport{
		func() closingTransport { return tcp.New() },
		func() closingTransport { return mux.New() },
	} {
		tr := mk()
		t.Run(tr.String(), func(t *testing.T) {
			l, err := tr.Listen("127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { l.Close() })
			accepted := make(chan transport.Socket, 4)
			go func() {
				for {
					s, err := l.Accept()
					if err != nil {
						return
					}
					accepted <- s // open until the case ends
				}
			}()
			t.Cleanup(func() {
				l.Close()
				for {
					select {
					case s := <-accepted:
						s.Close()
					default:
						return
					}
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := tr.Dial(ctx, l.Addr().String())
			require.NoError(t, err)
			defer s.Close()
			require.NoError(t, s.Send(&transport.Message{Body: []byte("x")}))

			require.NoError(t, tr.Close())
			// A dialled socket is closed: a mux stream says its session is.
			err = s.Recv(&transport.Message{})
			assert.True(t, errors.Is(err, transport.ErrClosed) || errors.Is(err, mux.ErrSessionClosed), "%v", err)
			_, err = tr.Dial(ctx, l.Addr().String())
			assert.ErrorIs(t, err, transport.ErrClosed)
			assert.NoError(t, tr.Close(), "Close again")

			other := mk()
			defer other.Close()
			s2, err := other.Dial(ctx, l.Addr().String())
			require.NoError(t, err, "the listener serves on")
			s2.Close()
		})
	}
}
