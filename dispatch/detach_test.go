package dispatch_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// Closing the Client, or the Server, fails a call in flight at once on every
// path, whatever its handler is doing — provided the call's context can end
// (on the shortcut, a call whose context cannot end runs its handler on the
// caller's goroutine).
func TestCloseFailsCallsInFlightAtOnce(t *testing.T) {
	for _, p := range pathsAndNetRPC() {
		for _, closing := range []string{"Client", "Server"} {
			t.Run(p.name+"/"+closing, func(t *testing.T) {
				e := p.setup(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				// The handler, blind to its context, is held until the
				// call has returned, rather than sleeping 600 ms with
				// the call to return within 400: a loaded machine took
				// longer. A call that waited for it would wait an hour.
				errc := callAsync(e.client, ctx, "Arith.SlowEcho", &Delayed{Delay: int(time.Hour / time.Millisecond)}, new(Blob))
				recv(t, e.arith.echoStarted, waitLong, "the handler")
				defer func() { e.arith.echoRelease <- struct{}{} }() // the handler ends, before the leak check
				if closing == "Client" {
					require.NoError(t, e.client.Close())
				} else {
					go e.server.Close() // waits for its connections, not its handlers
				}
				err := recv(t, errc, waitLong, "the call, its handler held")
				assert.ErrorIs(t, err, dispatch.ErrShutdown)
				assert.True(t, isConnFailure(err), "%v", err)
			})
		}
	}
}

// A handler that ends its goroutine (runtime.Goexit, as t.FailNow does)
// instead of returning still gets its caller an answer, on the network and
// on the shortcut when the call's context can end (with one that cannot,
// the handler runs on the caller's goroutine, which it then ends), and
// Shutdown still finds the Server idle.
func TestHandlerGoexit(t *testing.T) {
	for _, p := range pathsAndNetRPC() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			// Arguments gob can encode, for the netrpc path.
			require.NoError(t, dispatch.Handle(e.server, "Exit.Now", func(ctx context.Context, _ *int, _ *int) error {
				runtime.Goexit()
				return nil
			}))
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			err := e.client.Call(ctx, "Exit.Now", intPtr(1), new(int))
			assert.Equal(t, dispatch.CodeInternal, codeOf(err))
			assert.EqualError(t, err, "dispatch: handler of Exit.Now ended its goroutine (runtime.Goexit)")
			require.NoError(t, e.server.Shutdown(ctx))
		})
	}
}
