package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// A stream's own failures name the method and the path it took, as a
// call's do (TestOwnFailuresNameTheCall), from every way in: OpenStream,
// CallStream (both of its ways), typed Open, Send, Recv, Established,
// CloseAndRecv — its Client closed, its connection lost, its context
// ended — still matching ErrShutdown or the context's error, and keeping
// the context's code. And a handler that returns such a failure of a
// stream of its own sends its caller CodeInternal with those words, as a
// handler that returns a failed call's does. Before, every one of them
// was the bare words of ErrShutdown or of the context.
func init() {
	streamCases = append(streamCases,
		streamCase{"a closed Client's streams name the call", closedClientStreams, wantLines(
			"OpenStream: S.Echo over <path>: connection is shut down (shut down: true, *Error: false)",
			"CallStream: S.Count over <path>: connection is shut down (shut down: true, *Error: false)",
			"CallStream, ctx can end: S.Count over <path>: connection is shut down (shut down: true, *Error: false)",
			"typed server stream Open: S.Count over <path>: connection is shut down (shut down: true, *Error: false)",
			"typed server stream Call: S.Count over <path>: connection is shut down (shut down: true, *Error: false)",
			"typed client stream Open: S.Sum over <path>: connection is shut down (shut down: true, *Error: false)",
			"typed bidirectional Open: S.Echo over <path>: connection is shut down (shut down: true, *Error: false)",
		)},
		streamCase{"a stream whose Server closes names the call", serverClosesStream, wantLines(
			"Recv: S.Wait over <path>: connection is shut down: the server closed the connection (shut down: true, *Error: false)",
			"Send: S.Wait over <path>: connection is shut down: the server closed the connection (shut down: true, *Error: false)",
		)},
		streamCase{"a stream's ended context names the call", canceledStream, wantLines(
			"Established: S.Sum over <path>: context canceled (code canceled, matches context.Canceled: true)",
			"Send: S.Sum over <path>: context canceled (code canceled, matches context.Canceled: true)",
			"Recv: S.Sum over <path>: context canceled (code canceled, matches context.Canceled: true)",
			"typed client stream Established: S.Sum over <path>: context canceled (code canceled, matches context.Canceled: true)",
			"typed client stream CloseAndRecv: S.Sum over <path>: context canceled (code canceled, matches context.Canceled: true)",
			"typed server stream Open, ctx ended: S.Count over <path>: context canceled (code canceled, matches context.Canceled: true)",
		)},
		streamCase{"a handler's own stream fails", relayedStream, wantLines(
			"S.Count over memory: connection is shut down (code internal, shut down: false)",
		)},
	)
}

// wantLines wants the outcome's Extra to be lines, one a line.
func wantLines(lines ...string) func(t *testing.T, o streamOutcome) {
	return func(t *testing.T, o streamOutcome) {
		assert.Equal(t, streamOutcome{Extra: strings.Join(lines, "\n")}, o)
	}
}

// ownFailure words err, a failure of the caller's own, for comparison
// across paths.
func ownFailure(err error) string {
	if err == nil {
		return "<nil>"
	}
	var de *dispatch.Error
	return fmt.Sprintf("%s (shut down: %v, *Error: %v)", pathless(err.Error()), errors.Is(err, dispatch.ErrShutdown), errors.As(err, &de))
}

// ctxFailure words err, the end of the caller's context, for comparison
// across paths.
func ctxFailure(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s (code %s, matches context.Canceled: %v)", pathless(err.Error()), codeOf(err), errors.Is(err, context.Canceled))
}

// firstErr returns the first error seq yields, or nil.
func firstErr[T any](seq iter.Seq2[*T, error]) error {
	_, err := collect(seq)
	return err
}

func closedClientStreams(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
	require.NoError(t, c.Close())
	var lines []string
	add := func(what string, err error) { lines = append(lines, what+": "+ownFailure(err)) }
	_, err := dispatch.OpenStream[Num, Num](context.Background(), c, "S.Echo")
	add("OpenStream", err)
	add("CallStream", firstErr(dispatch.CallStream[Num, Num](context.Background(), c, "S.Count", &Num{1})))
	add("CallStream, ctx can end", firstErr(dispatch.CallStream[Num, Num](t.Context(), c, "S.Count", &Num{1})))
	count := dispatch.NewServerStreamMethod[Num, Num]("S.Count")
	_, err = count.Open(context.Background(), c, Num{1})
	add("typed server stream Open", err)
	add("typed server stream Call", firstErr(count.Call(context.Background(), c, Num{1})))
	_, err = dispatch.NewClientStreamMethod[Num, Num]("S.Sum").Open(context.Background(), c)
	add("typed client stream Open", err)
	_, err = dispatch.NewBidiStreamMethod[Num, Num]("S.Echo").Open(context.Background(), c)
	add("typed bidirectional Open", err)
	return streamOutcome{Extra: strings.Join(lines, "\n")}
}

func serverClosesStream(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
	s, err := dispatch.OpenStream[Num, Num](context.Background(), c, "S.Wait")
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Send(&Num{}))
	next, stop := iter.Pull2(s.Recv())
	defer stop()
	m, err, _ := next()
	require.NoError(t, err)
	require.Equal(t, 7, m.N)
	require.NoError(t, pr.srv.Close())
	_, err, _ = next()
	lines := []string{"Recv: " + ownFailure(err), "Send: " + ownFailure(s.Send(&Num{}))}
	return streamOutcome{Extra: strings.Join(lines, "\n")}
}

func canceledStream(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
	var lines []string
	add := func(what string, err error) { lines = append(lines, what+": "+ctxFailure(err)) }
	// S.Sum sends nothing and does not say it is ready before the
	// caller's side closes: Established waits until the context ends.
	ctx, cancel := context.WithCancel(context.Background())
	s, err := dispatch.OpenStream[Num, Num](ctx, c, "S.Sum")
	require.NoError(t, err)
	cancel()
	add("Established", s.Established())
	add("Send", s.Send(&Num{1}))
	add("Recv", firstErr(s.Recv()))

	sum := dispatch.NewClientStreamMethod[Num, Num]("S.Sum")
	ctx, cancel = context.WithCancel(context.Background())
	cs, err := sum.Open(ctx, c)
	require.NoError(t, err)
	cancel()
	add("typed client stream Established", cs.Established())
	_, err = cs.CloseAndRecv()
	add("typed client stream CloseAndRecv", err)

	_, err = dispatch.NewServerStreamMethod[Num, Num]("S.Count").Open(ctx, c, Num{1})
	add("typed server stream Open, ctx ended", err)
	return streamOutcome{Extra: strings.Join(lines, "\n")}
}

// relayedStream: a handler whose own stream, downstream over memory on a
// Client it has closed, fails returns that failure; its caller's stream
// ends with it.
func relayedStream(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
	m := memory.New()
	down, _ := streamServer(t)
	addr := serve(t, down, m, "")
	dc, err := dispatch.Dial(context.Background(), m, addr, dispatch.WithShortcut(dispatch.ShortcutOff))
	require.NoError(t, err)
	require.NoError(t, dc.Close())
	require.NoError(t, dispatch.HandleStream(pr.srv, "S.Relay", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		for n, err := range dispatch.CallStream[Num, Num](ctx, dc, "S.Count", &Num{1}) {
			if err != nil {
				return err
			}
			if err := s.Send(n); err != nil {
				return err
			}
		}
		return nil
	}, dispatch.Borrows()))
	err = firstErr(dispatch.CallStream[Num, Num](context.Background(), c, "S.Relay", &Num{}))
	return streamOutcome{Extra: fmt.Sprintf("%v (code %s, shut down: %v)", err, codeOf(err), errors.Is(err, dispatch.ErrShutdown))}
}

// A Client of replicas names a stream's own failures as a Client of one
// address does, with the path of the replica the stream took, and as it
// names a call's: its context ended, and its Client closed.
func TestReplicaStreamFailuresNameTheCall(t *testing.T) {
	f := newFleet(t, memory.New(), 2, func(int) string { return "" })
	c := f.dial(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, callErr := whoAmI(ctx, c, 0)
	streamErr := firstErr(dispatch.CallStream[int, string](ctx, c, "Who.Count", new(0)))
	assert.EqualError(t, callErr, "Who.Am over memory: context canceled")
	assert.EqualError(t, streamErr, "Who.Count over memory: context canceled")
	assert.Equal(t, ctxFailure(callErr), strings.Replace(ctxFailure(streamErr), "Who.Count", "Who.Am", 1))

	require.NoError(t, c.Close())
	_, callErr = whoAmI(t.Context(), c, 0)
	_, streamErr = dispatch.OpenStream[int, string](t.Context(), c, "Who.Count")
	assert.EqualError(t, callErr, "Who.Am over memory: connection is shut down")
	assert.EqualError(t, streamErr, "Who.Count over memory: connection is shut down")
	assert.Equal(t, ownFailure(callErr), strings.Replace(ownFailure(streamErr), "Who.Count", "Who.Am", 1))
}

// A Client's stream interceptor is told the error its caller receives,
// named as the caller gets it.
func TestStreamInterceptorToldTheNamedFailure(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			srv, _ := streamServer(t)
			told := make(chan error, 1)
			c, _ := dialPath(t, p, srv, dispatch.WithStreamInterceptors(func(ctx context.Context, method string) (context.Context, func(error), error) {
				return ctx, func(err error) { told <- err }, nil
			}))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got error
			for m, err := range dispatch.CallStream[Num, Num](ctx, c, "S.Wait", &Num{}) {
				if err != nil {
					got = err
					break
				}
				require.Equal(t, 7, m.N)
				cancel()
			}
			require.Error(t, got)
			assert.Equal(t, "S.Wait over <path>: context canceled", pathless(got.Error()))
			assert.EqualError(t, recv(t, told, waitLong, "the interceptor's end"), got.Error())
		})
	}
}

// A failed Dial names the call or stream it failed, as ErrShutdown's doc
// says, on every path (the shortcut's Server stopped, its calls go to the
// transport, which cannot dial it): before, it was "dispatch: dial …"
// alone, for calls and streams alike. A handler that returns it sends its
// caller CodeInternal.
func TestFailedDialNamesTheCall(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			srv, _ := streamServer(t)
			c, _ := dialPath(t, p, srv)
			var r Num
			require.NoError(t, c.Call(context.Background(), "S.Unary", &Num{1}, &r))
			require.NoError(t, srv.Close())
			var callErr error
			for range 3 { // the first may fail on the connection the Server closed
				if callErr = c.Call(context.Background(), "S.Unary", &Num{1}, &r); strings.Contains(callErr.Error(), "dial") {
					break
				}
			}
			_, openErr := dispatch.OpenStream[Num, Num](context.Background(), c, "S.Echo")
			streamErr := firstErr(dispatch.CallStream[Num, Num](context.Background(), c, "S.Count", &Num{1}))
			for what, err := range map[string]error{"Call": callErr, "OpenStream": openErr, "CallStream": streamErr} {
				require.Error(t, err, what)
				assert.Regexp(t, `^S\.(Unary|Echo|Count) over <path>: dispatch: dial `, pathless(err.Error()), what)
				var de *dispatch.Error
				assert.False(t, errors.As(err, &de), "%s: a failed Dial is not an *Error", what)
			}

			// Passed on by a handler: CodeInternal, its words.
			up, _ := streamServer(t)
			require.NoError(t, dispatch.Handle(up, "Up.Relay", func(ctx context.Context, args *Num, reply *Num) error {
				return c.Call(ctx, "S.Unary", args, reply)
			}))
			uc, _ := dialPath(t, dispatch.Path("memory"), up)
			err := uc.Call(context.Background(), "Up.Relay", &Num{1}, &r)
			assert.Equal(t, dispatch.CodeInternal, codeOf(err))
			assert.Regexp(t, `^S\.Unary over <path>: dispatch: dial `, pathless(err.Error()))
		})
	}
}
