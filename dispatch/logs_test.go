package dispatch_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/conntest"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// A graceful Shutdown is an end the client was told of (the Drain
// notice): the client logs it at Debug, and nothing at Warn or above —
// not "connection failed" with the EOF that follows the notice.
func TestGracefulDrainLogsNoWarning(t *testing.T) {
	for name, newTransport := range map[string]func(*slog.Logger) transport.Transport{
		"tcp": func(l *slog.Logger) transport.Transport { return tcp.New(tcp.WithLogger(l)) },
		"mux": func(l *slog.Logger) transport.Transport { return mux.New(mux.WithLogger(l)) },
	} {
		t.Run(name, func(t *testing.T) {
			client := &conntest.Records{}
			log := slog.New(client)
			srv := dispatch.NewServer()
			require.NoError(t, dispatch.Handle(srv, "Who.Am", func(context.Context, *struct{}, *string) error { return nil }))
			addr := serve(t, srv, newTransport(slog.New(slog.DiscardHandler)), "127.0.0.1:0")
			c, err := dispatch.Dial(context.Background(), newTransport(log), addr, dispatch.WithLogger(log))
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.Call(context.Background(), "Who.Am", nil, new(string)))

			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			require.NoError(t, srv.Shutdown(ctx))
			require.Eventually(t, func() bool {
				return client.Has("dispatch: connection closed by the server after its Drain notice") || client.Has("dispatch: connection failed")
			}, waitLong, time.Millisecond, "the client saw its connection end")
			time.Sleep(50 * time.Millisecond) // anything logged with it
			assert.Empty(t, client.Lines(func(r slog.Record) bool { return r.Level >= slog.LevelWarn }), "the client's records at Warn or above")
			assert.True(t, client.Has("dispatch: connection closed by the server after its Drain notice"), "the end is logged at Debug")
		})
	}
}
