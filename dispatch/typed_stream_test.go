package dispatch_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/rpcwire"
	"github.com/zerodial/transport/memory"
)

// Descriptors of the three stream shapes, registered by registerTypedStreams.
var (
	// typedCount sends A, A+1, … B numbers; a negative B fails after them.
	typedCount = dispatch.NewServerStreamMethod[Args, int]("Typed.Count")
	// typedSum sums what it receives; a negative number fails it. It is
	// ready (Established) as it starts.
	typedSum = dispatch.NewClientStreamMethod[int, Reply]("Typed.Sum")
	// typedEcho answers each message with it in upper case. It is ready
	// as it starts.
	typedEcho = dispatch.NewBidiStreamMethod[string, string]("Typed.Echo")
)

func registerTypedStreams(srv *dispatch.Server) error {
	err := typedCount.Handle(srv, func(ctx context.Context, args *Args, out dispatch.Sender[int]) error {
		n := args.B
		for i := range max(n, -n) {
			v := args.A + i
			if err := out.Send(&v); err != nil {
				return err
			}
		}
		if n < 0 {
			return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "typed: negative count"}
		}
		return nil
	}, dispatch.Borrows())
	if err != nil {
		return err
	}
	err = typedSum.Handle(srv, func(ctx context.Context, in dispatch.Receiver[int], reply *Reply) error {
		in.Ready()
		for v, err := range in.Recv() {
			if err != nil {
				return err
			}
			if *v < 0 {
				return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "typed: negative number"}
			}
			reply.X += *v
			reply.List = append(reply.List, *v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return typedEcho.Handle(srv, func(ctx context.Context, s *dispatch.ServerStream[string, string]) error {
		s.Ready()
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			up := strings.ToUpper(*m)
			if err := s.Send(&up); err != nil {
				return err
			}
		}
		return nil
	})
}

// streamPaths runs f on each path of typedPaths that carries streams, its
// Servers with the stream methods registered.
func streamPaths(t *testing.T, f func(t *testing.T, e typedEnv)) {
	for _, p := range typedPaths() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			if !e.streams {
				t.Skip("net/rpc codecs carry no streams")
			}
			e.register(t, registerTyped)
			e.register(t, registerTypedStreams)
			f(t, e)
		})
	}
}

// TestTypedServerStream: the handler receives its request as an argument;
// Call and Open yield its messages and then its error, with a context that
// can end and one that cannot (the shortcut's fast path); a caller by name
// reaches the same handler.
func TestTypedServerStream(t *testing.T) {
	streamPaths(t, func(t *testing.T, e typedEnv) {
		for _, ctx := range []context.Context{t.Context(), context.Background()} {
			got, err := collect(typedCount.Call(ctx, e.client, Args{10, 3}))
			require.NoError(t, err)
			assert.Equal(t, []int{10, 11, 12}, got)

			got, err = collect(typedCount.Call(ctx, e.client, Args{5, -2}))
			assert.Equal(t, []int{5, 6}, got)
			assert.Equal(t, dispatch.CodeOutOfRange, codeOf(err), "%v", err)

			s, err := typedCount.Open(ctx, e.client, Args{1, 4})
			require.NoError(t, err)
			got, err = collect(s.Recv())
			require.NoError(t, err)
			assert.Equal(t, []int{1, 2, 3, 4}, got)

			got, err = collect(dispatch.CallStream[Args, int](ctx, e.client, typedCount.Name(), &Args{7, 2}))
			require.NoError(t, err)
			assert.Equal(t, []int{7, 8}, got)
		}
	})
}

// TestTypedServerStreamOpen: Open returns once the handler is ready — it
// called Ready, before sending anything, or sent its first message — and
// waits for it until ctx ends; the error of a handler that failed before
// it was ready, and what the server refuses the stream with, Open returns;
// a caller closing the stream mid-way ends the handler's context.
func TestTypedServerStreamOpen(t *testing.T) {
	streamPaths(t, func(t *testing.T, e typedEnv) {
		held := func(name string, ready bool) (m *dispatch.ServerStreamMethod[Args, int], started chan Args, release chan struct{}, ended chan error) {
			m = dispatch.NewServerStreamMethod[Args, int](name)
			started, release, ended = make(chan Args, 2), make(chan struct{}), make(chan error, 2)
			e.register(t, func(srv *dispatch.Server) error {
				return m.Handle(srv, func(ctx context.Context, args *Args, out dispatch.Sender[int]) error {
					if ready {
						out.Ready()
					}
					started <- *args
					select {
					case <-release:
					case <-ctx.Done():
						ended <- ctx.Err()
						return ctx.Err()
					}
					return out.Send(&args.A)
				})
			})
			return m, started, release, ended
		}
		m, started, release, _ := held("Typed.Held", true)
		s, err := m.Open(t.Context(), e.client, Args{3, 4})
		require.NoError(t, err) // ready, while the handler holds its messages back
		assert.Equal(t, Args{3, 4}, recv(t, started, waitLong, "the handler's start"))
		close(release)
		got, err := collect(s.Recv())
		require.NoError(t, err)
		assert.Equal(t, []int{3}, got)

		// Not ready: Open waits for the first message.
		m, started, release, _ = held("Typed.Unready", false)
		opened := make(chan *dispatch.ServerStreamCall[int], 1)
		go func() {
			s, err := m.Open(t.Context(), e.client, Args{5, 1})
			assert.NoError(t, err)
			opened <- s
		}()
		recv(t, started, waitLong, "the handler's start")
		quiet(t, opened, "Open before the handler was ready")
		close(release)
		s = recv(t, opened, waitLong, "Open, once the handler sent")
		got, err = collect(s.Recv())
		require.NoError(t, err)
		assert.Equal(t, []int{5}, got)

		// Not ready, and ctx ends: Open returns ctx's error, and the
		// handler's context ends.
		m, started, _, ended := held("Typed.Abandoned", false)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		failed := make(chan error, 1)
		go func() {
			s, err := m.Open(ctx, e.client, Args{1, 1})
			assert.Nil(t, s)
			failed <- err
		}()
		recv(t, started, waitLong, "the handler's start")
		cancel()
		assert.Equal(t, dispatch.CodeCanceled, codeOf(recv(t, failed, waitLong, "Open's return")))
		assert.ErrorIs(t, recv(t, ended, waitLong, "the handler's end"), context.Canceled)

		// Closed mid-way: the handler's context ends.
		m, started, _, ended = held("Typed.Closed", true)
		s, err = m.Open(t.Context(), e.client, Args{1, 1})
		require.NoError(t, err)
		recv(t, started, waitLong, "the handler's start")
		require.NoError(t, s.Close())
		assert.ErrorIs(t, recv(t, ended, waitLong, "the handler's end"), context.Canceled)

		// A handler that fails before it is ready: Open returns its error;
		// one that returns without error: Open returns the stream, empty.
		for _, fail := range []bool{true, false} {
			name := fmt.Sprintf("Typed.Early%v", fail)
			early := dispatch.NewServerStreamMethod[Args, int](name)
			e.register(t, func(srv *dispatch.Server) error {
				return early.Handle(srv, func(ctx context.Context, args *Args, out dispatch.Sender[int]) error {
					if fail {
						return &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "typed: not now"}
					}
					return nil
				})
			})
			s, err := early.Open(t.Context(), e.client, Args{})
			if fail {
				assert.Nil(t, s)
				assert.Equal(t, dispatch.CodeFailedPrecondition, codeOf(err), "%v", err)
				continue
			}
			require.NoError(t, err)
			got, err := collect(s.Recv())
			require.NoError(t, err)
			assert.Empty(t, got)
		}

		missing := dispatch.NewServerStreamMethod[Args, int]("Typed.Missing")
		s, err = missing.Open(t.Context(), e.client, Args{})
		assert.Nil(t, s)
		assert.Equal(t, dispatch.CodeNotFound, codeOf(err), "%v", err)

		unary := dispatch.NewServerStreamMethod[Args, Reply](typedFill.Name())
		us, err := unary.Open(t.Context(), e.client, Args{})
		assert.Nil(t, us)
		assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err), "%v", err)
		assert.ErrorContains(t, err, "not a streaming method")

		ctx, cancel = context.WithCancel(t.Context())
		cancel()
		s, err = typedCount.Open(ctx, e.client, Args{1, 1})
		assert.Nil(t, s)
		assert.Equal(t, dispatch.CodeCanceled, codeOf(err), "%v", err)
	})
}

// TestTypedServerStreamMisuse: a caller by name that sends no request gets
// CodeInvalidArgument, and the handler does not run; a caller whose
// request the handler cannot decode gets the decoding error an untyped
// stream gets.
func TestTypedServerStreamMisuse(t *testing.T) {
	streamPaths(t, func(t *testing.T, e typedEnv) {
		s, err := dispatch.OpenStream[Args, int](t.Context(), e.client, typedCount.Name())
		require.NoError(t, err)
		require.NoError(t, s.CloseSend())
		got, err := collect(s.Recv())
		assert.Empty(t, got)
		assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err), "%v", err)
		assert.ErrorContains(t, err, "Typed.Count: the stream carried no request")

		wrong := dispatch.NewServerStreamMethod[string, int](typedCount.Name())
		got, err = collect(wrong.Call(t.Context(), e.client, "ten"))
		assert.Empty(t, got)
		assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err), "%v", err)
		_, untyped := collect(dispatch.CallStream[string, int](t.Context(), e.client, typedCount.Name(), new("ten")))
		assert.Equal(t, untyped, err)
	})
}

// TestTypedClientStream: the caller sends any number of messages and gets
// the one reply, or the handler's error; a stream that ends without a
// reply, or with two, fails with CodeInternal.
func TestTypedClientStream(t *testing.T) {
	streamPaths(t, func(t *testing.T, e typedEnv) {
		s, err := typedSum.Open(t.Context(), e.client)
		require.NoError(t, err)
		for i := 1; i <= 4; i++ {
			require.NoError(t, s.Send(&i))
		}
		r, err := s.CloseAndRecv()
		require.NoError(t, err)
		assert.Equal(t, Reply{X: 10, List: []int{1, 2, 3, 4}}, r)

		s, err = typedSum.Open(t.Context(), e.client)
		require.NoError(t, err)
		r, err = s.CloseAndRecv() // no message: the zero sum
		require.NoError(t, err)
		assert.Equal(t, Reply{}, r)

		s, err = typedSum.Open(t.Context(), e.client)
		require.NoError(t, err)
		_ = s.Send(new(-1)) // may fail once the handler has ended: CloseAndRecv says why
		r, err = s.CloseAndRecv()
		assert.Zero(t, r)
		assert.Equal(t, dispatch.CodeOutOfRange, codeOf(err), "%v", err)

		for name, replies := range map[string]int{"Typed.None": 0, "Typed.Two": 2} {
			e.register(t, func(srv *dispatch.Server) error {
				return dispatch.HandleStream(srv, name, func(ctx context.Context, s *dispatch.ServerStream[int, Reply]) error {
					for range replies {
						if err := s.Send(&Reply{X: 1}); err != nil {
							return err
						}
					}
					return nil
				})
			})
			s, err := dispatch.NewClientStreamMethod[int, Reply](name).Open(t.Context(), e.client)
			require.NoError(t, err)
			r, err := s.CloseAndRecv()
			assert.Zero(t, r)
			assert.Equal(t, dispatch.CodeInternal, codeOf(err), "%v", err)
			want := map[int]string{0: "the stream ended without a reply", 2: "more than one reply"}[replies]
			assert.ErrorContains(t, err, name+": "+want)
		}

		missing := dispatch.NewClientStreamMethod[int, Reply]("Typed.Missing")
		s, err = missing.Open(t.Context(), e.client)
		require.NoError(t, err) // what the server says, CloseAndRecv returns
		_, err = s.CloseAndRecv()
		assert.Equal(t, dispatch.CodeNotFound, codeOf(err), "%v", err)

		s, err = typedSum.Open(t.Context(), e.client)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		_, err = s.CloseAndRecv()
		assert.Error(t, err)
	})
}

// TestTypedBidiStream: both ends typed by one declaration, messages each
// way in turn.
func TestTypedBidiStream(t *testing.T) {
	streamPaths(t, func(t *testing.T, e typedEnv) {
		s, err := typedEcho.Open(t.Context(), e.client)
		require.NoError(t, err)
		defer s.Close()
		next, stop := iter.Pull2(s.Recv())
		defer stop()
		for _, w := range []string{"one", "two", "three"} {
			require.NoError(t, s.Send(&w))
			got, err, ok := next()
			require.True(t, ok)
			require.NoError(t, err)
			assert.Equal(t, strings.ToUpper(w), *got)
		}
		require.NoError(t, s.CloseSend())
		_, err, ok := next()
		assert.False(t, ok, "%v", err)
	})
}

// TestTypedStreamEstablished: a bidirectional or client stream's
// Established returns nil once the handler is ready — it called Ready,
// before any message, or sent its first message — and the server's
// refusal, or the error of a handler that failed before it was ready,
// otherwise, on every path.
func TestTypedStreamEstablished(t *testing.T) {
	streamPaths(t, func(t *testing.T, e typedEnv) {
		// A handler that reads before it sends, without Ready: ready at
		// its first message.
		unready := dispatch.NewBidiStreamMethod[string, string]("Typed.EchoUnready")
		e.register(t, func(srv *dispatch.Server) error {
			return unready.Handle(srv, func(ctx context.Context, s *dispatch.ServerStream[string, string]) error {
				for m, err := range s.Recv() {
					if err != nil {
						return err
					}
					if *m == "fail" {
						return &dispatch.Error{Code: dispatch.CodeAborted, Message: "typed: failed before ready"}
					}
					if err := s.Send(m); err != nil {
						return err
					}
				}
				return nil
			})
		})
		us, err := unready.Open(t.Context(), e.client)
		require.NoError(t, err)
		established := make(chan error, 1)
		go func() { established <- us.Established() }()
		quiet(t, established, "established before the handler was ready")
		require.NoError(t, us.Send(new("x")))
		require.NoError(t, recv(t, established, waitLong, "Established, once the handler sent"))
		require.NoError(t, us.Close())

		us, err = unready.Open(t.Context(), e.client)
		require.NoError(t, err)
		require.NoError(t, us.Send(new("fail")))
		err = us.Established()
		assert.Equal(t, dispatch.CodeAborted, codeOf(err), "%v", err)
		_, recvErr := collect(us.Recv())
		assert.Equal(t, err, recvErr, "Recv yields the handler's error Established returned")

		s, err := typedEcho.Open(t.Context(), e.client)
		require.NoError(t, err)
		require.NoError(t, s.Established())
		w := "after"
		require.NoError(t, s.Send(&w))
		require.NoError(t, s.CloseSend())
		got, err := collect(s.Recv())
		require.NoError(t, err)
		assert.Equal(t, []string{"AFTER"}, got)
		require.NoError(t, s.Established(), "taken, then ended: it was established")

		cs, err := typedSum.Open(t.Context(), e.client)
		require.NoError(t, err)
		require.NoError(t, cs.Established())
		require.NoError(t, cs.Send(new(5)))
		require.NoError(t, cs.Established(), "between Sends")
		r, err := cs.CloseAndRecv()
		require.NoError(t, err)
		assert.Equal(t, 5, r.X)

		missing, err := dispatch.NewBidiStreamMethod[string, string]("Typed.Missing").Open(t.Context(), e.client)
		require.NoError(t, err) // OpenStream does not wait
		err = missing.Established()
		assert.Equal(t, dispatch.CodeNotFound, codeOf(err), "%v", err)
		_, recvErr = collect(missing.Recv())
		assert.Equal(t, err, recvErr, "Recv yields the refusal Established returned")

		unary, err := dispatch.NewClientStreamMethod[int, Reply](typedFill.Name()).Open(t.Context(), e.client)
		require.NoError(t, err)
		err = unary.Established()
		assert.Equal(t, dispatch.CodeInvalidArgument, codeOf(err), "%v", err)
		require.NoError(t, unary.Close())
	})
}

// slowServer takes a stream's open frame and answers nothing until told:
// then it sends the stream's first window, as a server that takes the
// stream does, and ends it. It reports the open frame's Seq.
func slowServer(t *testing.T, l transport.Listener, opened chan<- string, take <-chan struct{}) {
	sock, err := l.Accept()
	if err != nil {
		return
	}
	defer sock.Close()
	var m transport.Message
	for m.Header[rpcwire.Stream] != rpcwire.StreamOpen {
		if err := sock.Recv(&m); err != nil {
			return
		}
	}
	seq := m.Header[rpcwire.Seq]
	opened <- seq
	<-take
	_ = sock.Send(&transport.Message{Header: map[string]string{rpcwire.Seq: seq, rpcwire.Stream: rpcwire.StreamWindow, rpcwire.Window: "65536"}})
	_ = sock.Send(&transport.Message{Header: map[string]string{rpcwire.Seq: seq, rpcwire.Stream: rpcwire.StreamEnd}})
	for sock.Recv(&m) == nil { // until the caller goes
	}
}

// TestTypedStreamWaitsForServer: on the network, against a server of an
// earlier release — whose first window carries no Ready, and which sends
// no ready frame — Established and a server stream's Open wait for the
// server to take the stream, not less — the caller's first message goes
// before — and give up when ctx ends.
func TestTypedStreamWaitsForServer(t *testing.T) {
	for _, how := range []string{"Established", "Open", "ctx ends"} {
		t.Run(how, func(t *testing.T) {
			tr := memory.New()
			l, err := tr.Listen("")
			require.NoError(t, err)
			defer l.Close()
			opened, take := make(chan string, 1), make(chan struct{})
			served := make(chan struct{})
			go func() {
				defer close(served)
				slowServer(t, l, opened, take)
			}()
			defer func() { <-served }()
			takeIt := sync.OnceFunc(func() { close(take) })
			defer takeIt() // first, so that the server goes on if the test fails
			c, err := dispatch.Dial(t.Context(), tr, l.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()

			done := make(chan error, 1)
			switch how {
			case "Established", "ctx ends":
				s, err := typedEcho.Open(ctx, c)
				require.NoError(t, err)
				defer s.Close()
				w := "first"
				require.NoError(t, s.Send(&w), "one message goes before the server's window")
				go func() { done <- s.Established() }()
			case "Open":
				go func() {
					s, err := typedCount.Open(ctx, c, Args{1, 1})
					if err == nil {
						defer s.Close()
					}
					done <- err
				}()
			}
			recv(t, opened, waitLong, "the open frame")
			quiet(t, done, "established before the server took the stream")
			if how == "ctx ends" {
				cancel()
				assert.Equal(t, dispatch.CodeCanceled, codeOf(recv(t, done, waitLong, "Established's return")))
				return
			}
			takeIt()
			assert.NoError(t, recv(t, done, waitLong, "the stream established"))
		})
	}
}

// sliceSender is a Sender of a test's own, which a handler accepts as it
// accepts its stream.
type sliceSender []int

func (s *sliceSender) Send(m *int) error {
	*s = append(*s, *m)
	return nil
}

func (s *sliceSender) Ready() {}

// TestTypedHandlerAlone: a server-streaming handler, a plain function of
// its request and a Sender, runs without a Server.
func TestTypedHandlerAlone(t *testing.T) {
	countTo := func(ctx context.Context, n *int, out dispatch.Sender[int]) error {
		for i := 1; i <= *n; i++ {
			if err := out.Send(&i); err != nil {
				return err
			}
		}
		return nil
	}
	var got sliceSender
	require.NoError(t, countTo(t.Context(), new(3), &got))
	assert.Equal(t, sliceSender{1, 2, 3}, got)

	srv := dispatch.NewServer()
	defer srv.Close()
	require.NoError(t, dispatch.NewServerStreamMethod[int, int]("Count.To").Handle(srv, countTo))
}
