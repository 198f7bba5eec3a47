package dispatch_test

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/internal/conntest"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
)

// The in-process paths — memory, shortcut copy and shortcut direct — work
// inside a testing/synctest bubble: every duration is the bubble's fake
// time, exactly; nothing the library starts outlives the bubble, and
// nothing made in one bubble (a pooled value, the quiet sweep) is waited
// on in another. Each test here is a bubble of its own, and they run in
// one test binary, one after the other, so that what leaks from one bubble
// into the next shows.

// bubblePath is a path a bubble can hold: no real socket, whose blocking
// is not durable, so that fake time moves. opts are its Client's options.
type bubblePath struct {
	name string
	opts []dispatch.ClientOption
}

var bubblePaths = []bubblePath{
	{"memory", nil},
	{"shortcut-copy", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutCopy)}},
	{"shortcut-direct", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutDirect)}},
}

// sleepArgs asks Clock.Sleep to sleep for D, or until its context ends.
type sleepArgs struct{ D time.Duration }

// bubbleServer serves, on a memory listener, Clock.Sleep (which sleeps
// for its argument, or until its context ends, and replies with how long
// it slept) and Arith.Add; the Server is closed when the test ends.
func bubbleServer(t *testing.T, tr *memory.Transport, opts ...dispatch.ServerOption) (*dispatch.Server, string) {
	t.Helper()
	srv := dispatch.NewServer(opts...)
	require.NoError(t, dispatch.Handle(srv, "Clock.Sleep", func(ctx context.Context, args *sleepArgs, reply *time.Duration) error {
		start := time.Now()
		select {
		case <-time.After(args.D):
		case <-ctx.Done():
			return ctx.Err()
		}
		*reply = time.Since(start)
		return nil
	}, dispatch.Borrows()))
	require.NoError(t, dispatch.Handle(srv, "Arith.Add", func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A + args.B
		return nil
	}, dispatch.Borrows()))
	return srv, serveIn(t, srv, tr, "")
}

// bubbleClient dials addr over tr with opts; the Client is closed when the
// test ends. On a shortcut path it asserts that no socket was dialled.
func bubbleClient(t *testing.T, tr *memory.Transport, addr string, opts ...dispatch.ClientOption) *dispatch.Client {
	t.Helper()
	ct := &countingTransport{Transport: tr}
	c, err := dispatch.Dial(context.Background(), ct, addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	if len(opts) > 0 {
		t.Cleanup(func() { assert.Zero(t, ct.dials.Load(), "the shortcut dialled a socket") })
	}
	return c
}

// TestSynctestUnary: a call on each in-process path, with a context that
// cannot end (on the shortcut, the handler runs on the caller's goroutine)
// and with one that can (on a worker while the caller waits), in bubbles
// one after the other. The second bubble crashed the test binary ("select
// on synctest channel from outside bubble"): pooled values kept channels
// made in the first.
func TestSynctestUnary(t *testing.T) {
	for _, p := range bubblePaths {
		for round := range 2 {
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				_, addr := bubbleServer(t, tr)
				c := bubbleClient(t, tr, addr, p.opts...)
				var sum int
				require.NoError(t, c.Call(context.Background(), "Arith.Add", Args{2, 3}, &sum), "%s round %d", p.name, round)
				assert.Equal(t, 5, sum)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				require.NoError(t, c.Call(ctx, "Arith.Add", Args{4, 3}, &sum), "%s round %d", p.name, round)
				assert.Equal(t, 7, sum)
				var slept time.Duration // the caller waits for the handler
				require.NoError(t, c.Call(ctx, "Clock.Sleep", sleepArgs{time.Second}, &slept), "%s round %d", p.name, round)
				assert.Equal(t, time.Second, slept)
			})
		}
	}
}

// TestSynctestHourLongHandler: a handler that sleeps an hour is answered
// after exactly an hour of the bubble's time, on every in-process path; the
// three bubbles run at once, each in its own time.
func TestSynctestHourLongHandler(t *testing.T) {
	for _, p := range bubblePaths {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				_, addr := bubbleServer(t, tr)
				c := bubbleClient(t, tr, addr, p.opts...)
				start := time.Now()
				var slept time.Duration
				require.NoError(t, c.Call(context.Background(), "Clock.Sleep", sleepArgs{time.Hour}, &slept))
				assert.Equal(t, time.Hour, slept)
				assert.Equal(t, time.Hour, time.Since(start))
			})
		})
	}
}

// TestSynctestDeadline: a caller's 5 s deadline ends its call after
// exactly 5 s of the bubble's time, whatever the handler does (it sleeps
// an hour, until its context ends), and the handler's context ends then
// too; on every in-process path.
func TestSynctestDeadline(t *testing.T) {
	for _, p := range bubblePaths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				srv := dispatch.NewServer()
				ended := make(chan time.Duration, 1)
				require.NoError(t, dispatch.Handle(srv, "Clock.Wait", func(ctx context.Context, _ *int, _ *int) error {
					start := time.Now()
					select {
					case <-ctx.Done():
					case <-time.After(time.Hour):
					}
					ended <- time.Since(start)
					return ctx.Err()
				}))
				addr := serveIn(t, srv, tr, "")
				c := bubbleClient(t, tr, addr, p.opts...)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start := time.Now()
				err := c.Call(ctx, "Clock.Wait", 0, new(int))
				assert.Equal(t, 5*time.Second, time.Since(start), "the call returned")
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, 5*time.Second, <-ended, "the handler's context ended")
			})
		})
	}
}

// serveIn serves srv on a new memory listener of tr at addr ("" picks
// one) until the test ends, and returns its address.
func serveIn(t *testing.T, srv *dispatch.Server, tr *memory.Transport, addr string) string {
	t.Helper()
	l, err := tr.Listen(addr)
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// loggedAt returns the times at which recs was given a record whose
// message begins with msg: in a bubble, the bubble's.
func loggedAt(recs *conntest.Records, msg string) []time.Time {
	var at []time.Time
	recs.Lines(func(r slog.Record) bool {
		if strings.HasPrefix(r.Message, msg) {
			at = append(at, r.Time)
		}
		return false
	})
	return at
}

// TestSynctestIdleTimeout: over memory, a Server's idle timeout closes a
// connection on which nothing came at exactly the timeout, and one whose
// last call was answered at its start at exactly 9/8 of it: the timeout's
// ticks come every eighth of it, and a tick that sees activity counts
// again from zero (connwatch.Idle) — the bounds the documentation gives,
// met exactly in the bubble's time.
func TestSynctestIdleTimeout(t *testing.T) {
	const idle = time.Minute
	for _, called := range []bool{false, true} {
		t.Run(fmt.Sprint("called=", called), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				recs := &conntest.Records{}
				_, addr := bubbleServer(t, tr, dispatch.WithIdleTimeout(idle), dispatch.WithLogger(slog.New(recs)))
				start := time.Now()
				c := bubbleClient(t, tr, addr) // dials: the connection is open
				if called {
					var sum int
					require.NoError(t, c.Call(context.Background(), "Arith.Add", Args{1, 2}, &sum))
				}
				time.Sleep(2 * idle)
				at := loggedAt(recs, "dispatch: closing idle connection")
				require.Len(t, at, 1, "idle connections closed")
				want := idle
				if called {
					want = idle * 9 / 8
				}
				assert.Equal(t, want, at[0].Sub(start), "closed after")
			})
		})
	}
}

// TestSynctestClientQuiet: a Client connection whose calls come one after
// another is read by no goroutine once its last caller has read its reply,
// until it has been quiet for 100 ms (clientQuietAfter): the quiet sweep
// then gives its watcher the reading back, which sees the end the server
// made of it meanwhile — at exactly 100 ms after the last call, in the
// bubble's time. A connection used seldom (here its first call) is read
// by its watcher at once, and sees its end when it comes. A sweep ticking
// every millisecond, as the Server's does while a connection is hurried,
// cost more than the call between two processes on one host
// (BenchmarkUnary's zerodial-tcp-unix-proc).
func TestSynctestClientQuiet(t *testing.T) {
	for _, calls := range []int{1, 3} {
		t.Run(fmt.Sprint("calls=", calls), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				const idle = 8 * time.Millisecond
				_, addr := bubbleServer(t, tr, dispatch.WithIdleTimeout(idle))
				recs := &conntest.Records{}
				c, err := dispatch.Dial(context.Background(), tr, addr, dispatch.WithLogger(slog.New(recs)))
				require.NoError(t, err)
				defer c.Close()
				for range calls {
					var sum int
					require.NoError(t, c.Call(context.Background(), "Arith.Add", Args{1, 2}, &sum))
				}
				start := time.Now()
				time.Sleep(time.Second)
				at := loggedAt(recs, "dispatch: connection failed")
				require.Len(t, at, 1, "the Client saw its connection end")
				want := 100 * time.Millisecond
				if calls == 1 {
					want = idle * 9 / 8 // the server's close, seen when it came
				}
				assert.Equal(t, want, at[0].Sub(start), "seen after")
			})
		})
	}
}

// TestSynctestShutdownAfterCalls: a graceful Shutdown waits for each
// connection's acknowledgement of its Drain notice. A Client whose last
// call came after a quiet of clientQuietAfter (its first, or one after a
// pause) reads the notice at once, and Shutdown returns at once; one whose
// calls came one after another reads it once its quiet sweep gives the
// reading back, within twice clientQuietAfter.
func TestSynctestShutdownAfterCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		calls  int           // calls in a row
		then   time.Duration // a pause, then one more call, if set
		atOnce bool
	}{
		{"one call", 1, 0, true},
		{"calls in a row", 3, 0, false},
		{"calls in a row, a pause, one call", 3, 150 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				srv, addr := bubbleServer(t, tr)
				c, err := dispatch.Dial(context.Background(), tr, addr)
				require.NoError(t, err)
				defer c.Close()
				call := func() {
					var sum int
					require.NoError(t, c.Call(context.Background(), "Arith.Add", Args{1, 2}, &sum))
				}
				for range tc.calls {
					call()
				}
				if tc.then > 0 {
					time.Sleep(tc.then)
					call()
				}
				start := time.Now()
				require.NoError(t, srv.Shutdown(context.Background()))
				took := time.Since(start)
				if tc.atOnce {
					assert.Zero(t, took, "Shutdown")
				} else {
					assert.LessOrEqual(t, took, 200*time.Millisecond, "Shutdown")
				}
			})
		})
	}
}

// TestSynctestInlinePace: over memory, a call that comes alone runs on
// the goroutine that read it, and a request sent behind it is read once
// the quiet sweep hands the reading on: within 2 ms (QuietAfter, one tick)
// for a method not known to be fast; for one known to be fast (16 short
// calls since the last long one), at the sweep's slow pace (quietSlow,
// 100 ms: between 2 and 101 ms). The hand-on makes the method unknown again at once: a call of
// it that another connection begins while the long one still runs is
// handed on within 2 ms, and so is the next once it has returned.
func TestSynctestInlinePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memory.New()
		_, addr := bubbleServer(t, tr)
		ctx := context.Background()
		dial := func() *dispatch.Client {
			c, err := dispatch.Dial(ctx, tr, addr)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			return c
		}
		c, other := dial(), dial()
		sleep := func(c *dispatch.Client, d time.Duration) error {
			var slept time.Duration
			return c.Call(ctx, "Clock.Sleep", &sleepArgs{D: d}, &slept)
		}
		// behind begins a Sleep of a second on c's connection, and
		// returns how long a call sent while it runs waits for its reply,
		// and a channel that says when the Sleep has returned.
		behind := func(c *dispatch.Client) (time.Duration, <-chan error) {
			done := make(chan error, 1)
			go func() { done <- sleep(c, time.Second) }()
			synctest.Wait() // the Sleep runs, on the goroutine that read it
			start := time.Now()
			var sum int
			require.NoError(t, c.Call(ctx, "Arith.Add", Args{1, 2}, &sum))
			return time.Since(start), done
		}
		// ended waits for a Sleep begun by behind to return.
		ended := func(done <-chan error) {
			require.NoError(t, <-done)
			synctest.Wait() // the Sleep's end recorded, as its reply went first
		}

		waited, done := behind(c)
		assert.LessOrEqual(t, waited, 2*time.Millisecond, "behind a method never run")
		ended(done)
		for range 16 {
			require.NoError(t, sleep(c, 0))
		}
		// The sweep ticks every QuietAfter while it watches a call of a
		// method not yet known to be fast (these sleeps), and hands on
		// any call it finds a QuietAfter old then: let it see them done,
		// and stop, so that the known-fast Sleep below restarts it at
		// its slow pace. (A sweep that went on ticking, at its slow pace,
		// could find that Sleep a QuietAfter old at any tick: the bound
		// holds, the lower one asserted below would not.)
		time.Sleep(5 * time.Millisecond)
		waited, done = behind(c)
		assert.Greater(t, waited, 2*time.Millisecond, "behind a method known to be fast")
		assert.LessOrEqual(t, waited, 101*time.Millisecond, "behind a method known to be fast")
		waited, doneOther := behind(other)
		assert.LessOrEqual(t, waited, 2*time.Millisecond, "behind a method handed on from, on another connection")
		ended(done)
		ended(doneOther)
		waited, done = behind(c)
		assert.LessOrEqual(t, waited, 2*time.Millisecond, "behind a method that ran long last")
		ended(done)
	})
}

// stalledReader is a memory Transport whose sockets' Recv waits until
// reading is let go: a client that stops reading its replies.
type stalledReader struct {
	*memory.Transport
	reading chan struct{} // closed: Recv reads
}

func (s *stalledReader) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	sock, err := s.Transport.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &stalledSocket{Socket: sock, reading: s.reading}, nil
}

type stalledSocket struct {
	transport.Socket
	reading chan struct{}
}

func (s *stalledSocket) Recv(m *transport.Message) error {
	<-s.reading
	return s.Socket.Recv(m)
}

// TestSynctestReplyTimeout: over memory, a Server whose peer stops
// reading its replies closes the connection once a reply has waited the
// reply timeout to be written: the replies fill the peer's queue and the
// next one waits. The watchdog ticks every quarter of the timeout from the
// first reply's write; its first tick sees the replies written before the
// one that waits, and counts from there, so it closes the connection at
// exactly 5/4 of the timeout in the bubble's time — the bound its
// documentation gives, met exactly. The calls then fail with ErrShutdown.
func TestSynctestReplyTimeout(t *testing.T) {
	const timeout = 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		tr := memory.New()
		recs := &conntest.Records{}
		_, addr := bubbleServer(t, tr, dispatch.WithReplyTimeout(timeout), dispatch.WithLogger(slog.New(recs)))
		st := &stalledReader{Transport: tr, reading: make(chan struct{})}
		c, err := dispatch.Dial(context.Background(), st, addr)
		require.NoError(t, err)
		defer c.Close()
		start := time.Now()
		calls := make([]*dispatch.Call, 200) // more than the peer's queue holds
		for i := range calls {
			calls[i] = c.Go(context.Background(), "Arith.Add", Args{i, 1}, new(int), nil)
		}
		time.Sleep(2 * timeout)
		at := loggedAt(recs, "dispatch: closing connection: a reply could not be written in time")
		require.Len(t, at, 1, "connections closed for a stalled reader")
		assert.Equal(t, timeout*5/4, at[0].Sub(start), "closed after")
		close(st.reading)
		failed := 0
		for _, call := range calls {
			<-call.Done
			if call.Error != nil {
				require.ErrorIs(t, call.Error, dispatch.ErrShutdown)
				failed++
			}
		}
		assert.Positive(t, failed, "calls failed with their connection")
	})
}

// The three stream shapes, over the typed descriptors.
var (
	tickStream = dispatch.NewServerStreamMethod[sleepArgs, time.Duration]("Ticks.Every")
	sumStream  = dispatch.NewClientStreamMethod[time.Duration, []time.Duration]("Ticks.Seen")
	echoStream = dispatch.NewBidiStreamMethod[time.Duration, time.Duration]("Ticks.Echo")
)

// tickServer serves the three shapes on a memory listener of tr:
// Ticks.Every sends, every D, the time since it began, until its context
// ends; Ticks.Seen replies with the time since it began at which each
// message came; Ticks.Echo answers each message d after it came with d.
func tickServer(t *testing.T, tr *memory.Transport) string {
	t.Helper()
	srv := dispatch.NewServer()
	require.NoError(t, tickStream.Handle(srv, func(ctx context.Context, args *sleepArgs, out dispatch.Sender[time.Duration]) error {
		start := time.Now()
		tick := time.NewTicker(args.D)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return ctx.Err()
			}
			since := time.Since(start)
			if err := out.Send(&since); err != nil {
				return err
			}
		}
	}))
	require.NoError(t, sumStream.Handle(srv, func(ctx context.Context, in dispatch.Receiver[time.Duration], reply *[]time.Duration) error {
		start := time.Now()
		for _, err := range in.Recv() {
			if err != nil {
				return err
			}
			*reply = append(*reply, time.Since(start))
		}
		return nil
	}))
	require.NoError(t, echoStream.Handle(srv, func(ctx context.Context, s *dispatch.ServerStream[time.Duration, time.Duration]) error {
		for d, err := range s.Recv() {
			if err != nil {
				return err
			}
			time.Sleep(*d)
			if err := s.Send(d); err != nil {
				return err
			}
		}
		return nil
	}))
	return serveIn(t, srv, tr, "")
}

// TestSynctestStreams: every stream shape on every in-process path, each
// message at its exact time in the bubble's: a server stream's message
// every millisecond, a thousand of them in exactly a second, ended by
// the caller's 5 s deadline at exactly 5 s; a client stream's messages a
// second apart seen by the handler a second apart; a bidirectional
// stream's answers each exactly its delay after its message.
func TestSynctestStreams(t *testing.T) {
	for _, p := range bubblePaths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				c := bubbleClient(t, tr, tickServer(t, tr), p.opts...)

				ctx, cancel := context.WithCancel(context.Background())
				start := time.Now()
				n := 0
				for since, err := range tickStream.Call(ctx, c, sleepArgs{time.Millisecond}) {
					require.NoError(t, err)
					n++
					require.Equal(t, time.Duration(n)*time.Millisecond, *since, "message %d sent after", n)
					require.Equal(t, *since, time.Since(start), "message %d received after", n)
					if n == 1000 {
						break
					}
				}
				cancel()
				assert.Equal(t, time.Second, time.Since(start))

				ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start = time.Now()
				var got []time.Duration
				var end error
				for since, err := range tickStream.Call(ctx, c, sleepArgs{2 * time.Second}) {
					if err != nil {
						end = err
						break
					}
					got = append(got, *since)
				}
				assert.ErrorIs(t, end, context.DeadlineExceeded)
				assert.Equal(t, 5*time.Second, time.Since(start), "the stream ended after")
				assert.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second}, got)

				cs, err := sumStream.Open(context.Background(), c)
				require.NoError(t, err)
				for i := range 5 {
					if i > 0 {
						time.Sleep(time.Second)
					}
					require.NoError(t, cs.Send(new(time.Duration)))
				}
				seen, err := cs.CloseAndRecv()
				require.NoError(t, err)
				assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}, seen)

				bs, err := echoStream.Open(context.Background(), c)
				require.NoError(t, err)
				next, stop := iter.Pull2(bs.Recv())
				defer stop()
				for _, d := range []time.Duration{time.Second, time.Minute, time.Millisecond} {
					start := time.Now()
					require.NoError(t, bs.Send(&d))
					echo, err, ok := next()
					require.True(t, ok)
					require.NoError(t, err)
					assert.Equal(t, d, *echo)
					assert.Equal(t, d, time.Since(start), "answered after")
				}
				require.NoError(t, bs.CloseSend())
				_, err, ok := next()
				assert.False(t, ok, "the stream ended: %v", err)
			})
		})
	}
}

// TestSynctestShutdown: a graceful Shutdown begun at 1 s with a call in
// flight that ends at 10 s returns at exactly 10 s, the call answered;
// on every in-process path.
func TestSynctestShutdown(t *testing.T) {
	for _, p := range bubblePaths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memory.New()
				srv, addr := bubbleServer(t, tr)
				c := bubbleClient(t, tr, addr, p.opts...)
				start := time.Now()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var slept time.Duration
				done := callAsync(c, ctx, "Clock.Sleep", sleepArgs{10 * time.Second}, &slept)
				time.Sleep(time.Second)
				require.NoError(t, srv.Shutdown(context.Background()))
				assert.Equal(t, 10*time.Second, time.Since(start), "Shutdown returned after")
				require.NoError(t, <-done)
				assert.Equal(t, 10*time.Second, slept)
			})
		})
	}
}

// TestSynctestClose: a Server's Close, and a Client's, fail the call in
// flight at once — at exactly the moment of the Close in the bubble's
// time, with ErrShutdown — and end its handler's context; on every
// in-process path.
func TestSynctestClose(t *testing.T) {
	for _, p := range bubblePaths {
		for _, closing := range []string{"server", "client"} {
			t.Run(p.name+"/"+closing, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tr := memory.New()
					srv, addr := bubbleServer(t, tr)
					c := bubbleClient(t, tr, addr, p.opts...)
					start := time.Now()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					done := callAsync(c, ctx, "Clock.Sleep", sleepArgs{time.Hour}, new(time.Duration))
					time.Sleep(time.Second)
					if closing == "server" {
						srv.Close()
					} else {
						c.Close()
					}
					err := <-done
					assert.Equal(t, time.Second, time.Since(start), "the call returned after")
					require.ErrorIs(t, err, dispatch.ErrShutdown)
					synctest.Wait() // the handler has returned: its context ended
				})
			})
		}
	}
}

// replicaServers serves n replicas of Who.Am on memory listeners of tr
// named replica-0 … (so that one restarts at its address), each counting
// its calls; restart serves replica i anew.
type replicaServers struct {
	t     *testing.T
	tr    *memory.Transport
	srvs  []*dispatch.Server
	calls []atomic.Int64
	// hold, when set, makes Who.Wait on replica 0 wait until its context
	// ends; on the others, and without it, Who.Wait answers at once.
	hold bool
	// health is each replica's health service.
	health []*health.Server
}

func newReplicaServers(t *testing.T, tr *memory.Transport, n int) *replicaServers {
	f := &replicaServers{t: t, tr: tr, srvs: make([]*dispatch.Server, n), calls: make([]atomic.Int64, n), health: make([]*health.Server, n)}
	for i := range n {
		f.restart(i)
	}
	return f
}

func (f *replicaServers) addr(i int) string { return fmt.Sprint("replica-", i) }

func (f *replicaServers) target() string {
	addrs := make([]string, len(f.srvs))
	for i := range addrs {
		addrs[i] = f.addr(i)
	}
	return "static:///" + strings.Join(addrs, ",")
}

func (f *replicaServers) restart(i int) {
	srv := dispatch.NewServer()
	calls := &f.calls[i]
	require.NoError(f.t, dispatch.Handle(srv, "Who.Am", func(ctx context.Context, _ *int, who *int) error {
		calls.Add(1)
		*who = i
		return nil
	}))
	require.NoError(f.t, dispatch.Handle(srv, "Who.Wait", func(ctx context.Context, _ *int, who *int) error {
		calls.Add(1)
		if f.hold && i == 0 {
			<-ctx.Done()
			return ctx.Err()
		}
		*who = i
		return nil
	}))
	f.health[i] = health.NewServer()
	require.NoError(f.t, f.health[i].Register(srv))
	serveIn(f.t, srv, f.tr, f.addr(i))
	f.srvs[i] = srv
}

// counts returns the calls each replica has had, and zeroes them.
func (f *replicaServers) counts() []int64 {
	n := make([]int64, len(f.calls))
	for i := range f.calls {
		n[i] = f.calls[i].Swap(0)
	}
	return n
}

// whoAm makes n calls of Who.Am, each of which must succeed.
func whoAm(t *testing.T, c *dispatch.Client, n int) {
	t.Helper()
	for range n {
		require.NoError(t, c.Call(context.Background(), "Who.Am", 0, new(int)))
	}
}

// replicaPaths are bubblePaths for a Client of replicas: on the shortcut,
// WithLocalLimit(0) treats the replicas of this process as any other, so
// that round-robin chooses among them.
func replicaPaths() []bubblePath {
	out := make([]bubblePath, len(bubblePaths))
	for i, p := range bubblePaths {
		opts := append([]dispatch.ClientOption{dispatch.WithResolver(resolver.Default)}, p.opts...)
		if len(p.opts) > 0 {
			opts = append(opts, dispatch.WithLocalLimit(0))
		}
		out[i] = bubblePath{p.name, opts}
	}
	return out
}

func dialReplicas(t *testing.T, f *replicaServers, opts ...dispatch.ClientOption) *dispatch.Client {
	t.Helper()
	c, err := dispatch.Dial(context.Background(), f.tr, f.target(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSynctestReplicaEjection: replicas served in the process, in a
// bubble. Round-robin takes them in turn. A replica closed is ejected at
// its third refused dial, for exactly the ejection time, while the calls
// go to the others and none fails; still down when its time is up, it is
// tried again at exactly that moment and ejected for twice as long; back,
// it is let in at exactly the end of that time, and takes calls again.
// Every replica read as ejected before any failure (an epoch of the real
// clock made the bubble's time decades in the past).
func TestSynctestReplicaEjection(t *testing.T) {
	const d = time.Second
	for _, p := range replicaPaths() {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newReplicaServers(t, memory.New(), 3)
				c := dialReplicas(t, f, append(p.opts, dispatch.WithEjection(3, d))...)
				for _, st := range c.Replicas() {
					require.True(t, st.In, "%s is out before any failure: %+v", st.Addr, st)
				}
				whoAm(t, c, 30)
				assert.Equal(t, []int64{10, 10, 10}, f.counts(), "round-robin")

				time.Sleep(time.Second) // the connections quiet
				f.srvs[0].Close()
				synctest.Wait() // its connection seen closed
				killed := time.Now()
				whoAm(t, c, 30) // refused dials are tried elsewhere, for free
				st := c.Replicas()[0]
				require.False(t, st.In, "a closed replica after 30 calls: %+v", st)
				assert.Equal(t, killed.Add(d), st.Until, "ejected until")
				assert.Equal(t, 1, st.Ejections)
				assert.ErrorIs(t, st.Why, transport.ErrConnectionRefused)
				assert.Equal(t, int64(0), f.counts()[0])

				time.Sleep(d - time.Nanosecond)
				require.False(t, c.Replicas()[0].In, "in before its time is up")
				time.Sleep(time.Nanosecond)
				require.True(t, c.Replicas()[0].In, "out after its time is up")
				second := time.Now()
				whoAm(t, c, 30) // still down: ejected again, for 2 d
				st = c.Replicas()[0]
				require.False(t, st.In, "a replica down again after 30 calls: %+v", st)
				assert.Equal(t, second.Add(2*d), st.Until, "ejected again until")
				assert.Equal(t, 2, st.Ejections)

				f.restart(0)
				time.Sleep(2*d - time.Nanosecond)
				whoAm(t, c, 30)
				assert.Equal(t, int64(0), f.counts()[0], "calls to a replica out")
				time.Sleep(time.Nanosecond)
				whoAm(t, c, 30)
				assert.Equal(t, int64(10), f.counts()[0], "calls to a replica let back in")
				st = c.Replicas()[0]
				assert.True(t, st.In)
				assert.Zero(t, st.Ejections, "ejections after a success")
			})
		})
	}
}

// TestSynctestRetryBudget: calls of an idempotent method in flight on a
// replica that closes, in a bubble: of 8 failing together with a budget of
// 10 tokens that successes do not refill, exactly 4 are retried on the
// other replica, and succeed; the 4 others fail with ErrShutdown.
func TestSynctestRetryBudget(t *testing.T) {
	for _, p := range replicaPaths() {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newReplicaServers(t, memory.New(), 2)
				f.hold = true
				c := dialReplicas(t, f, append(p.opts, dispatch.WithIdempotent("Who.Wait"),
					dispatch.WithRetryBudget(dispatch.RetryBudget{Max: 10, Ratio: 0}))...)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errs := make([]<-chan error, 16) // round-robin: 8 held on replica 0
				for i := range errs {
					errs[i] = callAsync(c, ctx, "Who.Wait", 0, new(int))
				}
				// Over memory, a call that comes alone runs on the goroutine
				// that read it, which the quiet sweep hands the reading on
				// from after a millisecond: the calls behind it are read
				// then.
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()
				assert.Equal(t, []int64{8, 8}, f.counts())
				f.srvs[0].Close()
				failed := 0
				for _, ch := range errs {
					if err := <-ch; err != nil {
						require.ErrorIs(t, err, dispatch.ErrShutdown)
						failed++
					}
				}
				assert.Equal(t, 4, failed, "calls not retried")
				assert.Equal(t, []int64{0, 4}, f.counts(), "retries")
			})
		})
	}
}

// TestSynctestReplicaCheck: a replica whose health service says it is not
// serving is left out at the first check after — checks every second, in
// the bubble's time exactly — and let back in at the first check after it
// says it serves again.
func TestSynctestReplicaCheck(t *testing.T) {
	for _, p := range replicaPaths() {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newReplicaServers(t, memory.New(), 2)
				c := dialReplicas(t, f, append(p.opts, dispatch.WithReplicaCheck(health.Checker(""), time.Second))...)
				synctest.Wait() // the first checks
				require.True(t, c.Replicas()[0].In)
				time.Sleep(time.Second / 2)
				f.health[0].SetServingStatus("", health.NotServing)
				time.Sleep(time.Second/2 - time.Nanosecond)
				require.True(t, c.Replicas()[0].In, "out before a check")
				time.Sleep(time.Nanosecond)
				synctest.Wait() // the check at 1 s
				st := c.Replicas()[0]
				require.False(t, st.In, "in after a check said it is not serving")
				assert.ErrorContains(t, st.Why, string(health.NotServing))
				f.counts()
				whoAm(t, c, 10)
				assert.Equal(t, []int64{0, 10}, f.counts(), "calls while replica 0 is out")
				f.health[0].SetServingStatus("", health.Serving)
				time.Sleep(time.Second - time.Nanosecond)
				require.False(t, c.Replicas()[0].In, "in before a check")
				time.Sleep(time.Nanosecond)
				synctest.Wait() // the check at 2 s
				require.True(t, c.Replicas()[0].In, "out after a check said it serves")
				whoAm(t, c, 10)
				assert.Equal(t, []int64{5, 5}, f.counts(), "calls once replica 0 is back")
			})
		})
	}
}
