package dispatch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
)

// shutdownAsync runs srv.Shutdown(ctx) in a goroutine and delivers its
// result.
func shutdownAsync(srv *dispatch.Server, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	return done
}

// Shutdown waits for a call in flight, on every path, and the call gets its
// reply.
func TestShutdownWaitsForCallInFlight(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			h := newHolder(t, e.server)
			reply := new(int)
			errc := callAsync(e.client, context.Background(), "Hold.Wait", intPtr(7), reply)
			recv(t, h.started, waitLong, "the handler to start")

			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			done := shutdownAsync(e.server, ctx)
			quiet(t, done, "Shutdown's return, with a call in flight")
			quiet(t, errc, "the held call's return")

			h.free()
			require.NoError(t, recv(t, errc, waitLong, "the held call"))
			assert.Equal(t, 7, *reply)
			require.NoError(t, recv(t, done, waitLong, "Shutdown"))
		})
	}
}

// While Shutdown waits, a new call on an open connection — or from a
// shortcut Client that reached the Server — is turned away with
// CodeUnavailable, and a new client cannot connect.
func TestShutdownTurnsNewCallsAway(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			h := newHolder(t, e.server)
			errc := callAsync(e.client, context.Background(), "Hold.Wait", intPtr(1), new(int))
			recv(t, h.started, waitLong, "the handler to start")
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			done := shutdownAsync(e.server, ctx)

			// Shutdown runs concurrently: call until it has begun.
			var err error
			for deadline := time.Now().Add(waitLong); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				n := new(int)
				if err = e.client.Call(context.Background(), "Arith.Multiply", Args{2, 3}, n); err != nil {
					assert.Zero(t, *n)
					break
				}
			}
			require.Error(t, err, "calls were still served long after Shutdown began")
			assert.Equal(t, &dispatch.Error{Code: dispatch.CodeUnavailable, Message: "dispatch: server is shutting down"}, err)

			// A new client: the listener is closed. (On the shortcut paths
			// through a transport of its own, so that its refused dial is
			// not counted against the shortcut Client's.)
			tr := e.tr
			if isShortcut(p) {
				tr = tcp.New()
			}
			c, err := dispatch.Dial(context.Background(), tr, e.addr, e.opts...)
			if err == nil {
				// mux may hand out a stream on its existing session
				// before the server has refused it: then the call fails.
				ctx, cancel := context.WithTimeout(context.Background(), waitLong)
				defer cancel()
				err = c.Call(ctx, "Arith.Multiply", Args{2, 3}, new(int))
				c.Close()
				assert.NotErrorIs(t, err, context.DeadlineExceeded, "the call was neither served nor refused")
				assert.True(t, isConnFailure(err) || codeOf(err) == dispatch.CodeUnavailable, "%v", err)
			} else if !errors.Is(err, transport.ErrConnectionRefused) {
				// A dial that reached the listener's backlog just before
				// Shutdown closed it is reset before the preface instead.
				assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF), "%v", err)
				assert.Contains(t, err.Error(), "closed the connection before its preface")
			}

			h.free()
			require.NoError(t, recv(t, errc, waitLong, "the held call"))
			require.NoError(t, recv(t, done, waitLong, "Shutdown"))
		})
	}
}

// When ctx ends first, Shutdown returns ctx.Err() at once; on the network,
// the connections are then closed, so the call in flight fails as a
// connection failure and its handler's context is cancelled.
func TestShutdownReturnsContextError(t *testing.T) {
	for _, p := range paths {
		for _, how := range []string{"deadline", "cancel"} {
			t.Run(p.name+"/"+how, func(t *testing.T) {
				e := p.setup(t)
				h := newHolder(t, e.server)
				errc := callAsync(e.client, context.Background(), "Hold.Wait", intPtr(1), new(int))
				recv(t, h.started, waitLong, "the handler to start")

				var ctx context.Context
				var cancel context.CancelFunc
				want := context.DeadlineExceeded
				if how == "deadline" {
					ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
				} else {
					ctx, cancel = context.WithCancel(context.Background())
					time.AfterFunc(50*time.Millisecond, cancel)
					want = context.Canceled
				}
				defer cancel()
				// The call Shutdown would wait for is held until the test
				// frees it: a Shutdown that did not return at its ctx's end
				// would not return at all, which recv's bound tells (a
				// second, as it was, a loaded machine need not keep).
				err := recv(t, shutdownAsync(e.server, ctx), waitLong, "Shutdown, its ctx over")
				assert.Equal(t, want, err)

				if !isShortcut(p) {
					err = recv(t, errc, waitLong, "the call in flight")
					assert.True(t, isConnFailure(err), "want a connection failure, got %v (%T)", err, err)
					assert.Equal(t, context.Canceled, recv(t, h.ended, waitLong, "the handler's context to end"))
				}
				// (On the shortcut, see TestServerStopEndsShortcutCalls.)
				h.free()
				if isShortcut(p) {
					recv(t, errc, waitLong, "the call in flight")
				}
			})
		}
	}
}

// Close stops the server at once, without waiting for the call in flight,
// which fails as a connection failure.
func TestCloseStopsAtOnce(t *testing.T) {
	for _, p := range paths {
		if isShortcut(p) {
			continue // TestServerStopEndsShortcutCalls
		}
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			h := newHolder(t, e.server)
			errc := callAsync(e.client, context.Background(), "Hold.Wait", intPtr(1), new(int))
			recv(t, h.started, waitLong, "the handler to start")

			closed := make(chan error, 1)
			go func() { closed <- e.server.Close() }()
			require.NoError(t, recv(t, closed, waitLong, "Close, with a call in flight"))
			err := recv(t, errc, waitLong, "the call in flight")
			assert.True(t, isConnFailure(err), "want ErrShutdown or another connection failure, got %v (%T)", err, err)
			assert.Equal(t, context.Canceled, recv(t, h.ended, waitLong, "the handler's context to end"))

			// Later calls cannot connect.
			err = e.client.Call(context.Background(), "Arith.Multiply", Args{1, 1}, new(int))
			assert.True(t, isConnFailure(err), "%v", err)
		})
	}
}

// Serve returns ErrServerClosed once the server is shut down or closed, and
// at once when called afterwards.
func TestServeReturnsErrServerClosed(t *testing.T) {
	for _, tt := range transports {
		for _, stop := range []string{"Shutdown", "Close"} {
			t.Run(tt.name+"/"+stop, func(t *testing.T) {
				tr := tt.make(t)
				srv, _, _ := newServer(t)
				l, err := tr.Listen(tt.listen)
				require.NoError(t, err)
				served := make(chan error, 1)
				go func() { served <- srv.Serve(l) }()

				// Serving: a call goes through (Serve may need a moment to
				// start accepting; Dial waits in the backlog meanwhile).
				c, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
				require.NoError(t, err)
				defer c.Close()
				n := new(int)
				require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{4, 5}, n))
				assert.Equal(t, 20, *n)
				quiet(t, served, "Serve's return")

				if stop == "Shutdown" {
					require.NoError(t, srv.Shutdown(context.Background()))
				} else {
					require.NoError(t, srv.Close())
				}
				assert.ErrorIs(t, recv(t, served, waitLong, "Serve's return"), dispatch.ErrServerClosed)

				l2, err := tr.Listen(tt.listen)
				require.NoError(t, err)
				defer l2.Close()
				assert.ErrorIs(t, srv.Serve(l2), dispatch.ErrServerClosed)
				assert.ErrorIs(t, srv.Start(l2), dispatch.ErrServerClosed)
			})
		}
	}
}

// After Shutdown, a shortcut Client's call no longer reaches the server: it
// goes to the transport, as if the shortcut had never found the server, and
// fails to connect.
func TestShutdownShortcutFallsBack(t *testing.T) {
	for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutCopy, dispatch.ShortcutDirect} {
		t.Run(mode.String(), func(t *testing.T) {
			srv, _, rec := newServer(t)
			tr := &countingTransport{Transport: tcp.New()}
			addr := serve(t, srv, tr, "127.0.0.1:0")
			c, err := dispatch.Dial(context.Background(), tr, addr, dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer c.Close()
			n := new(int)
			require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{6, 7}, n))
			assert.Equal(t, 42, *n)
			assert.Zero(t, tr.dials.Load())
			rec.take()

			require.NoError(t, srv.Shutdown(context.Background()))
			*n = 5
			err = c.Call(context.Background(), "Arith.Multiply", Args{6, 7}, n)
			assert.ErrorIs(t, err, transport.ErrConnectionRefused)
			assert.True(t, isConnFailure(err))
			assert.Zero(t, *n)
			assert.Equal(t, int32(1), tr.dials.Load(), "the call went to the transport")
			assert.Empty(t, rec.take(), "the server was not reached")
		})
	}
}

// Client.Close fails the calls in flight with ErrShutdown — at once on the
// network, when the handler returns on the shortcut — and every later call,
// on every path.
func TestClientCloseFailsCalls(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			h := newHolder(t, e.server)
			reply := intPtr(3)
			errc := callAsync(e.client, context.Background(), "Hold.Wait", intPtr(7), reply)
			recv(t, h.started, waitLong, "the handler to start")

			require.NoError(t, e.client.Close())
			if !isShortcut(p) {
				err := recv(t, errc, waitLong, "the call in flight, after Close")
				assertClosed(t, "Hold.Wait", err)
			}
			h.free()
			if isShortcut(p) {
				err := recv(t, errc, waitLong, "the call in flight, after Close")
				assertClosed(t, "Hold.Wait", err)
				assert.Zero(t, *reply, "the failed call's reply is left zero")
			}

			err := e.client.Call(context.Background(), "Arith.Multiply", Args{2, 2}, new(int))
			assertClosed(t, "Arith.Multiply", err)
			call := e.client.Go(context.Background(), "Arith.Multiply", Args{2, 2}, new(int), nil)
			got := recv(t, call.Done, waitLong, "Go's call")
			assert.Same(t, call, got)
			assertClosed(t, "Arith.Multiply", got.Error)
			assert.Same(t, dispatch.ErrShutdown, e.client.Close(), "a second Close, as net/rpc")
		})
	}
}

// The server still serves others while one client goes: a client's Close
// does not disturb another client of the same server.
func TestClientCloseLeavesOthers(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			opts := []dispatch.ClientOption{}
			if isShortcut(p) {
				mode := dispatch.ShortcutCopy
				if p.name == "shortcut-direct" {
					mode = dispatch.ShortcutDirect
				}
				opts = append(opts, dispatch.WithShortcut(mode))
			}
			other, err := dispatch.Dial(context.Background(), e.tr, e.addr, opts...)
			require.NoError(t, err)
			defer other.Close()
			require.NoError(t, e.client.Close())
			n := new(int)
			require.NoError(t, other.Call(context.Background(), "Arith.Multiply", Args{3, 4}, n))
			assert.Equal(t, 12, *n)
			assert.True(t, errors.Is(e.client.Call(context.Background(), "Arith.Multiply", Args{3, 4}, n), dispatch.ErrShutdown))
		})
	}
}

// Bug: when Shutdown's ctx ends first, Shutdown returns without ending the
// Server's worker goroutines (stopWorkers runs only on success), and since
// idle workers no longer time out, the ones left idle — the readers of the
// closed connections, the workers of calls that finish later — wait for a
// task forever, unless Close is called too.
func TestShutdownTimeoutLeavesNoGoroutines(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	m := memory.New()
	srv, _, _ := newServer(t)
	t.Cleanup(func() { srv.Close() }) // what ends them today
	h := newHolder(t, srv)
	l, err := m.Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	c, err := dispatch.Dial(context.Background(), m, l.Addr().String())
	require.NoError(t, err)
	errc := callAsync(c, context.Background(), "Hold.Wait", intPtr(1), new(int))
	recv(t, h.started, waitLong, "the handler to start")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, srv.Shutdown(ctx), context.DeadlineExceeded)
	recv(t, errc, waitLong, "the call in flight")
	recv(t, h.ended, waitLong, "the handler")
	require.NoError(t, c.Close())

	err = goleak.Find(ignore)
	if err != nil && strings.Contains(err.Error(), "(*Server).worker") {
		t.Errorf("bug: goroutines left behind by Shutdown:\n%v", err)
	} else {
		assert.NoError(t, err)
	}
}

// A listener closed under Start — by its owner, or by the peer of a
// listener over one connection — ends the serving as an ordinary event,
// logged at Info rather than as an error.
func TestStartListenerClosedIsNotAnError(t *testing.T) {
	var log syncBuffer
	srv := dispatch.NewServer(dispatch.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer srv.Close()
	l, err := memory.New().Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	require.NoError(t, l.Close())
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "stopped serving") }, waitLong, time.Millisecond)
	assert.Contains(t, log.String(), "level=INFO msg=\"dispatch: listener closed; stopped serving it\"")
	assert.NotContains(t, log.String(), "level=ERROR")
}

// Bug: Shutdown started the RegisterOnShutdown hooks and returned without
// waiting for them, at once when nothing was in flight, so that a process
// exiting after Shutdown cut its hooks off (an etcd registration then
// stayed for a whole lease). Shutdown returns once they have returned.
func TestShutdownWaitsForHooks(t *testing.T) {
	srv, _, _ := newServer(t)
	l, err := memory.New().Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	var ran [2]atomic.Bool
	for i := range ran {
		srv.RegisterOnShutdown(func() {
			time.Sleep(100 * time.Millisecond) // a registry's round trip, say
			ran[i].Store(true)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	assert.True(t, ran[0].Load() && ran[1].Load(), "Shutdown returned before its hooks did")
}

// A hook registered while Shutdown waits for its hooks — here by one of
// them — is started at once and waited for too, as RegisterOnShutdown's
// doc promises: Shutdown took its list of hooks once, and returned without
// it.
func TestShutdownWaitsForHookRegisteredMeanwhile(t *testing.T) {
	srv, _, _ := newServer(t)
	l, err := memory.New().Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	started, release := make(chan struct{}), make(chan struct{})
	var ran atomic.Bool
	srv.RegisterOnShutdown(func() {
		// Long enough for Shutdown, with nothing in flight, to be waiting
		// for this hook when it registers the next.
		time.Sleep(50 * time.Millisecond)
		srv.RegisterOnShutdown(func() {
			close(started)
			<-release
			ran.Store(true)
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := shutdownAsync(srv, ctx)
	recv(t, started, waitLong, "the hook registered by a hook")
	quiet(t, done, "Shutdown's return, with a hook still running")
	close(release)
	require.NoError(t, recv(t, done, waitLong, "Shutdown"))
	assert.True(t, ran.Load(), "Shutdown returned before the hook registered meanwhile")
}

// A hook that does not return holds Shutdown up only until ctx ends: then
// Shutdown returns ctx's error, and leaves nothing of its own behind (the
// hook's goroutine ends when the hook does).
func TestShutdownHookBoundedByContext(t *testing.T) {
	for _, how := range []string{"deadline", "cancel"} {
		t.Run(how, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			srv, _, _ := newServer(t)
			l, err := memory.New().Listen("")
			require.NoError(t, err)
			require.NoError(t, srv.Start(l))
			release, returned := make(chan struct{}), make(chan struct{})
			srv.RegisterOnShutdown(func() {
				defer close(returned)
				<-release
			})
			var ctx context.Context
			var cancel context.CancelFunc
			want := context.DeadlineExceeded
			if how == "deadline" {
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(50*time.Millisecond, cancel)
				want = context.Canceled
			}
			defer cancel()
			assert.Equal(t, want, recv(t, shutdownAsync(srv, ctx), waitLong, "Shutdown, with a hook that blocks"))
			quiet(t, returned, "the blocked hook's return")

			// The Server has stopped all the same: a Shutdown, then a Close,
			// once the hook returns, has nothing left to wait for.
			close(release)
			recv(t, returned, waitLong, "the hook's return")
			require.NoError(t, srv.Shutdown(context.Background()))
			require.NoError(t, srv.Close())
			assert.NoError(t, goleak.Find(ignore))
		})
	}
}

// Close starts the hooks, so that a registration is withdrawn however the
// Server stops, but does not wait for them: a hook that blocks does not
// hold Close up. A Shutdown after Close waits for them, bounded by its ctx.
func TestCloseStartsHooksWithoutWaiting(t *testing.T) {
	srv, _, _ := newServer(t)
	l, err := memory.New().Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	started, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv.RegisterOnShutdown(func() {
		defer close(returned)
		close(started)
		<-release
	})
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	require.NoError(t, recv(t, closed, waitLong, "Close, with a hook that blocks"))
	recv(t, started, waitLong, "the hook Close started")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, srv.Shutdown(ctx), context.DeadlineExceeded, "Shutdown after Close waits for the hook")

	// Registered after the Server stopped: called at once, and waited for.
	var late atomic.Bool
	srv.RegisterOnShutdown(func() {
		time.Sleep(20 * time.Millisecond)
		late.Store(true)
	})
	close(release)
	recv(t, returned, waitLong, "the hook's return")
	require.NoError(t, srv.Shutdown(context.Background()))
	assert.True(t, late.Load(), "Shutdown returned before the hook registered late")
}

// ShuttingDown is nil outside a handler: on a Client's side of a call,
// and on a context that never reached a Server.
func TestShuttingDownOutsideHandler(t *testing.T) {
	assert.Nil(t, dispatch.ShuttingDown(context.Background()))
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			seen := make(chan (<-chan struct{}), 1)
			c, err := dispatch.Dial(context.Background(), e.tr, e.addr, append(slices.Clone(e.opts), dispatch.WithInterceptors(
				func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
					seen <- dispatch.ShuttingDown(ctx)
					return next(ctx, args, reply)
				}))...)
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{2, 3}, new(int)))
			assert.Nil(t, recv(t, seen, waitLong, "the client interceptor"))
		})
	}
}

// Bug: a stream that runs until its caller leaves (a watch, a
// subscription) kept Shutdown waiting until its ctx ended, and its handler
// could not learn that the Server was stopping. ShuttingDown(ctx) tells
// the handler, on every path, without cancelling its context; the handler
// returns, the caller's stream ends cleanly, and Shutdown returns long
// before its ctx ends. The same for a call (a long poll).
func TestShuttingDownEndsStreamsAndCalls(t *testing.T) {
	for _, p := range paths {
		// The caller's context: one that cannot end takes the shortcut's
		// fast way for CallStream (the handler on the caller's goroutine).
		for _, cctx := range []string{"background", "cancellable"} {
			t.Run(p.name+"/"+cctx, func(t *testing.T) {
				e := p.setup(t)
				told := make(chan error, 2) // the handler's ctx.Err() when told
				early := make(chan struct{}, 2)
				wait := func(ctx context.Context) bool {
					select {
					case <-dispatch.ShuttingDown(ctx):
						early <- struct{}{} // told before Shutdown began
					default:
					}
					select {
					case <-dispatch.ShuttingDown(ctx):
						told <- ctx.Err()
						return true
					case <-ctx.Done():
						return false
					}
				}
				require.NoError(t, dispatch.HandleStream(e.server, "Watch.Ticks", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
					if err := s.Send(&Num{1}); err != nil {
						return err
					}
					if !wait(ctx) {
						return ctx.Err()
					}
					return nil // a clean end
				}, dispatch.Borrows()))
				pollStarted := make(chan struct{}, 1)
				require.NoError(t, dispatch.Handle(e.server, "Poll.Wait", func(ctx context.Context, _ *struct{}, reply *string) error {
					pollStarted <- struct{}{}
					if !wait(ctx) {
						return ctx.Err()
					}
					*reply = "shutting down"
					return nil
				}, dispatch.Borrows()))

				ctx := context.Background()
				if cctx == "cancellable" {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				got, ended := make(chan int), make(chan error, 1)
				go func() {
					for m, err := range dispatch.CallStream[Num, Num](ctx, e.client, "Watch.Ticks", &Num{}) {
						if err != nil {
							ended <- err
							return
						}
						got <- m.N
					}
					ended <- nil
				}()
				assert.Equal(t, 1, recv(t, got, waitLong, "the stream's first message"))
				var reply string
				polled := callAsync(e.client, ctx, "Poll.Wait", nil, &reply)
				recv(t, pollStarted, waitLong, "the poll's handler")
				quiet(t, told, "the handlers told of a Shutdown not begun")

				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				done := shutdownAsync(e.server, sctx)
				for range 2 {
					assert.NoError(t, recv(t, told, waitLong, "a handler told of the Shutdown"),
						"the handler's context ended at Shutdown's start")
				}
				assert.NoError(t, recv(t, ended, waitLong, "the stream's clean end"))
				assert.NoError(t, recv(t, polled, waitLong, "the poll's reply"))
				assert.Equal(t, "shutting down", reply)
				require.NoError(t, recv(t, done, waitLong, "Shutdown, its streams and calls ended"))
				t.Logf("Shutdown took %v", time.Since(start))
				assert.Empty(t, early)
			})
		}
	}
}

// Close, too, closes ShuttingDown's channel (as well as ending the
// handlers' contexts), on every path.
func TestShuttingDownAtClose(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			started, told := make(chan struct{}, 1), make(chan struct{}, 1)
			require.NoError(t, dispatch.Handle(e.server, "Poll.Wait", func(ctx context.Context, _ *struct{}, reply *string) error {
				started <- struct{}{}
				<-dispatch.ShuttingDown(ctx) // and nothing else
				told <- struct{}{}
				return nil
			}))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := callAsync(e.client, ctx, "Poll.Wait", nil, new(string))
			recv(t, started, waitLong, "the handler")
			require.NoError(t, e.server.Close())
			recv(t, told, waitLong, "the handler told of the Close")
			recv(t, errc, waitLong, "the call")
		})
	}
}
