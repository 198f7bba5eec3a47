package mux_test

import (
	"bytes"
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/conntest"
	"github.com/zerodial/transport/mux"
)

// TestCompressionNegotiated: the session's prefaces decide for all its
// streams: a body of JSON text crosses a stream compressed only when both
// ends have compression on, and arrives as it was sent either way.
func TestCompressionNegotiated(t *testing.T) {
	body := conntest.JSONText(256 << 10)
	for _, tc := range []struct {
		name           string
		client, server []mux.Option
		compressed     bool
	}{
		{"both on", nil, nil, true},
		{"client off", []mux.Option{mux.WithoutCompression()}, nil, false},
		{"server off", nil, []mux.Option{mux.WithoutCompression()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc, ps := net.Pipe()
			cc, sc := &conntest.CountingConn{Conn: pc}, &conntest.CountingConn{Conn: ps}
			type listened struct {
				l   transport.Listener
				err error
			}
			lch := make(chan listened, 1)
			go func() {
				l, err := mux.NewServerConn(context.Background(), sc, tc.server...)
				lch <- listened{l, err}
			}()
			client, err := mux.NewClientConn(t.Context(), cc, tc.client...)
			require.NoError(t, err)
			t.Cleanup(func() { client.Close() })
			ls := <-lch
			require.NoError(t, ls.err)
			t.Cleanup(func() { ls.l.Close() })

			accepted := make(chan transport.Socket, 1)
			go func() {
				s, err := ls.l.Accept()
				if assert.NoError(t, err) {
					accepted <- s
				}
			}()
			a, err := client.Dial(t.Context())
			require.NoError(t, err)
			t.Cleanup(func() { a.Close() })
			// A stream reaches Accept with its first frame.
			require.NoError(t, a.Send(&transport.Message{Body: []byte("hello")}))
			b := <-accepted
			t.Cleanup(func() { b.Close() })
			var m transport.Message
			require.NoError(t, b.Recv(&m))

			for _, dir := range []struct {
				from, to transport.Socket
				wrote    *conntest.CountingConn
			}{{a, b, cc}, {b, a, sc}} {
				before := dir.wrote.Written()
				sent := make(chan error, 1)
				go func() { sent <- dir.from.Send(&transport.Message{Body: body}) }()
				require.NoError(t, dir.to.Recv(&m))
				require.NoError(t, <-sent)
				assert.True(t, bytes.Equal(body, m.Body), "the body changed on the way")
				onWire := dir.wrote.Written() - before
				if tc.compressed {
					assert.Less(t, onWire, int64(len(body)/3), "sent uncompressed")
				} else {
					assert.Greater(t, onWire, int64(len(body)), "sent compressed")
				}
			}
		})
	}
}
