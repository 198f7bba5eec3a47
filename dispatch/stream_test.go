package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/memory"
)

// Num is the message of most test streams.
type Num struct{ N int }

// streamProbe is what the test streams' handlers report.
type streamProbe struct {
	ended chan error // a handler's context error when it returned
	sent  atomic.Int64
	bus   bus              // what the watches subscribe to (stream_ready_test.go)
	srv   *dispatch.Server // the Server the streams are on
}

// streamServer serves the test streams, every one borrowing, so that a
// ShortcutDirect client takes the direct path.
func streamServer(t testing.TB, opts ...dispatch.ServerOption) (*dispatch.Server, *streamProbe) {
	pr := &streamProbe{ended: make(chan error, 64)}
	srv := dispatch.NewServer(opts...)
	pr.srv = srv
	reg := func(name string, fn func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error) {
		require.NoError(t, dispatch.HandleStream(srv, name, fn, dispatch.Borrows()))
	}
	first := func(s *dispatch.ServerStream[Num, Num]) (int, error) {
		for m, err := range s.Recv() {
			if err != nil {
				return 0, err
			}
			return m.N, nil
		}
		return 0, errors.New("no arguments")
	}
	// Count sends 0 … n-1 for an argument n.
	reg("S.Count", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		n, err := first(s)
		if err != nil {
			return err
		}
		var m Num
		for i := range n {
			m.N = i
			if err := s.Send(&m); err != nil {
				return err
			}
		}
		return nil
	})
	// Sum checks that it gets 1, 2, 3, … in order and sends their count.
	reg("S.Sum", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		n := 0
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			if n++; m.N != n {
				return fmt.Errorf("message %d is %d", n, m.N)
			}
		}
		return s.Send(&Num{n})
	})
	reg("S.Echo", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	})
	// Fail sends n messages, then fails.
	reg("S.Fail", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		n, err := first(s)
		if err != nil {
			return err
		}
		for i := range n {
			if err := s.Send(&Num{i}); err != nil {
				return err
			}
		}
		return &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "no more"}
	})
	// FailDetail sends one message, then fails with n details
	// (error_details_test.go).
	reg("S.FailDetail", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		n, err := first(s)
		if err != nil {
			return err
		}
		if err := s.Send(&Num{n}); err != nil {
			return err
		}
		return detailedError(n)
	})
	reg("S.Panic", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		_ = s.Send(&Num{1})
		panic("boom")
	})
	// Flood sends until Send fails, counting what it sent, and reports its
	// context's error.
	reg("S.Flood", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		var m Num
		for {
			if err := s.Send(&m); err != nil {
				pr.ended <- ctx.Err()
				return err
			}
			m.N++
			pr.sent.Add(1)
		}
	})
	// Lend sends until Send fails, and reports Send's error.
	reg("S.Lend", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		var m Num
		for {
			if err := s.Send(&m); err != nil {
				pr.ended <- err
				return err
			}
			m.N++
		}
	})
	// Wait sets reply metadata, sends one message and waits for its
	// context to end.
	reg("S.Wait", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		if err := dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"r": "late"}); err != nil {
			return err
		}
		if err := s.Send(&Num{7}); err != nil {
			return err
		}
		<-ctx.Done()
		pr.ended <- ctx.Err()
		return ctx.Err()
	})
	// Early returns at once, whatever the caller sends.
	reg("S.Early", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error { return nil })
	// Meta sends back the caller's metadata "k" (its length) and its path,
	// and sets reply metadata.
	require.NoError(t, dispatch.HandleStream(srv, "S.Meta", func(ctx context.Context, s *dispatch.ServerStream[Num, string]) error {
		ci, _ := dispatch.CallInfoFrom(ctx)
		for _, v := range []string{dispatch.MetadataFrom(ctx)["k"], string(ci.Path), ci.Method} {
			if err := s.Send(&v); err != nil {
				return err
			}
		}
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"r": "reply"})
	}, dispatch.Borrows()))
	// Bytes echoes raw messages.
	require.NoError(t, dispatch.HandleStream(srv, "S.Bytes", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	}, dispatch.Borrows()))
	require.NoError(t, dispatch.Handle(srv, "S.Unary", func(ctx context.Context, args *Num, reply *Num) error {
		*reply = *args
		return nil
	}))
	registerWatches(t, srv, &pr.bus)
	return srv, pr
}

// collect ranges over seq, returning what it yielded and its error.
func collect[T any](seq iter.Seq2[*T, error]) ([]T, error) {
	var got []T
	for m, err := range seq {
		if err != nil {
			return got, err
		}
		got = append(got, *m)
	}
	return got, nil
}

// streamOutcome is what a caller observes of one stream case.
type streamOutcome struct {
	Got     string
	Err     string
	Code    dispatch.Code
	IsDL    bool
	IsCanc  bool
	Handler string // what the handler's context said, if the case asks
	Extra   string
}

func observeErr(o *streamOutcome, err error) {
	if err == nil {
		return
	}
	o.Err = pathless(err.Error()) // a failure of the caller's own names its path
	var de *dispatch.Error
	if errors.As(err, &de) {
		o.Code = de.Code
	}
	o.IsDL = errors.Is(err, context.DeadlineExceeded)
	o.IsCanc = errors.Is(err, context.Canceled)
}

func summary(ns []Num) string {
	if len(ns) == 0 {
		return "none"
	}
	for i, n := range ns {
		if n.N != i {
			return fmt.Sprintf("%d messages, #%d is %d", len(ns), i, n.N)
		}
	}
	return fmt.Sprintf("0…%d", len(ns)-1)
}

type streamCase struct {
	name  string
	run   func(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome
	check func(t *testing.T, o streamOutcome)
}

func handlerSaid(t *testing.T, pr *streamProbe) string {
	select {
	case err := <-pr.ended:
		return fmt.Sprint(err)
	case <-time.After(5 * time.Second):
		t.Error("the handler did not return")
		return "<still running>"
	}
}

// streamCases are the stream cases beyond the conformance suite's
// (dispatchtest): those of the typed descriptors and of Established, which
// are dispatch's Client's own API.
var streamCases = []streamCase{
	// stream_ready_test.go has what these share.
	{"a watch is in place when Open returns", watchRace(openWatch(watchServer, 0)), wantNoMiss},
	{"a watch is in place when Open returns, its snapshot sent", watchRace(openWatch(watchSnapshot, 1)), wantNoMiss},
	{"a bidirectional watch is in place when Established returns", watchRace(openBidiWatch), wantNoMiss},
	{"a client-streaming watch is in place when Established returns", watchRace(openClientWatch), wantNoMiss},
}

// TestStreamParity runs every stream case on the five paths and demands
// the same outcome on each.
func TestStreamParity(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			outcomes := map[dispatch.Path]streamOutcome{}
			for _, p := range pathNames {
				t.Run(string(p), func(t *testing.T) {
					srv, pr := streamServer(t)
					c, _ := dialPath(t, p, srv)
					o := tc.run(t, c, pr)
					tc.check(t, o)
					outcomes[p] = o
				})
			}
			for _, p := range pathNames[1:] {
				if o, ok := outcomes[p]; ok {
					assert.Equal(t, outcomes[pathNames[0]], o, "%s differs from %s", p, pathNames[0])
				}
			}
		})
	}
}

// A stream whose caller does not read stalls its handler, and nothing else:
// calls and other streams on the same connection go on, on every path.
func TestStreamStallBlocksNothingElse(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			srv, pr := streamServer(t)
			c, _ := dialPath(t, p, srv)
			stalled, err := dispatch.OpenStream[Num, Num](context.Background(), c, "S.Flood")
			require.NoError(t, err)
			require.Eventually(t, func() bool { n := pr.sent.Load(); time.Sleep(50 * time.Millisecond); return n == pr.sent.Load() },
				waitLong, time.Millisecond, "the handler stalls in Send")
			var reply Num
			require.NoError(t, c.Call(context.Background(), "S.Unary", &Num{5}, &reply))
			assert.Equal(t, 5, reply.N)
			got, err := collect(dispatch.CallStream[Num, Num](context.Background(), c, "S.Count", &Num{100}))
			require.NoError(t, err)
			assert.Equal(t, "0…99", summary(got))
			require.NoError(t, stalled.Close())
			assert.Equal(t, "context canceled", handlerSaid(t, pr))
		})
	}
}

// Shutdown waits for the streams in flight, which hold the Server's gate as
// calls do, and turns new ones away; Close ends them at once.
func TestStreamShutdownAndClose(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			srv, _ := streamServer(t)
			c, _ := dialPath(t, p, srv)
			s, err := dispatch.OpenStream[Num, Num](context.Background(), c, "S.Echo")
			require.NoError(t, err)
			require.NoError(t, s.Send(&Num{1}))
			next, stop := iter.Pull2(s.Recv())
			defer stop()
			m, err, _ := next()
			require.NoError(t, err)
			require.Equal(t, 1, m.N)

			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(context.Background()) }()
			quiet(t, shut, "Shutdown with a stream in flight")
			_, err = collect(dispatch.CallStream[Num, Num](context.Background(), c, "S.Count", &Num{1}))
			assert.Equal(t, dispatch.CodeUnavailable, codeOf(err), "a new stream while draining: %v", err)
			require.NoError(t, s.Send(&Num{2}), "the stream in flight goes on")
			m, err, _ = next()
			require.NoError(t, err)
			require.Equal(t, 2, m.N)
			require.NoError(t, s.CloseSend())
			_, err, ok := next()
			assert.False(t, ok, "the stream ends: %v", err)
			require.NoError(t, recv(t, shut, 5*time.Second, "Shutdown"))
		})
		t.Run(string(p)+"/close", func(t *testing.T) {
			srv, pr := streamServer(t)
			c, _ := dialPath(t, p, srv)
			var o streamOutcome
			n := 0
			for _, err := range dispatch.CallStream[Num, Num](context.Background(), c, "S.Flood", &Num{}) {
				if err != nil {
					observeErr(&o, err)
					break
				}
				if n++; n == 3 {
					go srv.Close()
				}
			}
			assert.True(t, strings.HasPrefix(o.Err, "S.Flood over <path>: "+dispatch.ErrShutdown.Error()), "the caller's stream fails: %q", o.Err)
			assert.Equal(t, "context canceled", handlerSaid(t, pr))
		})
	}
}

// lingeringConn is a net.Conn whose every Write, its bytes sent, returns
// only after a while: to its socket's send queue a write stays under way
// long after its peer has read it, so that frames queued meanwhile wait
// behind it.
type lingeringConn struct {
	net.Conn
	linger time.Duration
}

func (c lingeringConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	time.Sleep(c.linger)
	return n, err
}

// A graceful Shutdown closes a connection only once what it queued is
// written: the end of a stream in flight, queued behind the write of the
// stream's last message (still under way when the handler returns and the
// gate counts no call), reaches the caller, and the stream ends cleanly
// rather than with the connection closed under it.
func TestStreamShutdownWritesQueuedEnd(t *testing.T) {
	srv, _ := streamServer(t)
	a, b := net.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeSocket(frame.NewSocket(lingeringConn{Conn: a, linger: 100 * time.Millisecond}, 1<<20))
	}()
	c, err := dispatch.NewClient(frame.NewSocket(b, 1<<20))
	require.NoError(t, err)
	defer c.Close()
	s, err := dispatch.OpenStream[Num, Num](context.Background(), c, "S.Echo")
	require.NoError(t, err)
	require.NoError(t, s.Send(&Num{1}))
	next, stop := iter.Pull2(s.Recv())
	defer stop()
	m, err, _ := next()
	require.NoError(t, err)
	require.Equal(t, 1, m.N)

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	quiet(t, shut, "Shutdown with a stream in flight")
	require.NoError(t, s.Send(&Num{2}))
	m, err, _ = next()
	require.NoError(t, err)
	require.Equal(t, 2, m.N)
	// The handler's echo of 2 is being written still (lingering): the
	// end it sends on returning queues behind it.
	require.NoError(t, s.CloseSend())
	_, err, ok := next()
	assert.False(t, ok, "the stream ends: %v", err)
	require.NoError(t, recv(t, shut, 5*time.Second, "Shutdown"))
	<-served
}

// A peer that sends beyond the window it was granted breaks the protocol:
// the server closes the connection, rather than queue without bound.
func TestStreamWindowEnforced(t *testing.T) {
	srv, _ := streamServer(t, dispatch.WithStreamWindow(1024))
	tr := memory.New()
	addr := serve(t, srv, tr, "")
	sock, err := tr.Dial(context.Background(), addr)
	require.NoError(t, err)
	defer sock.Close()
	send := func(h map[string]string, body []byte) error {
		return sock.Send(&transport.Message{Header: h, Body: body})
	}
	require.NoError(t, send(map[string]string{"Service-Method": "S.Wait", "Seq": "1", "Stream": "open", "Window": "65536"}, nil))
	var m transport.Message
	require.NoError(t, sock.Recv(&m))
	assert.Equal(t, map[string]string{"Seq": "1", "Stream": "window", "Window": "1024"}, m.Header, "the server's window comes first")
	// S.Wait reads nothing: 600 bytes, then 600 more (over 1024 with more
	// than half outstanding), is beyond the window.
	body := make([]byte, 600)
	require.NoError(t, send(map[string]string{"Seq": "1", "Stream": "msg"}, body))
	require.NoError(t, send(map[string]string{"Seq": "1", "Stream": "msg"}, body))
	for {
		if err := sock.Recv(&m); err != nil {
			assert.ErrorIs(t, err, io.EOF, "the server hung up")
			return
		}
	}
}

// WithStreamWindow refuses what is not a window, on both ends.
func TestWithStreamWindowInvalid(t *testing.T) {
	_, err := dispatch.Dial(context.Background(), memory.New(), "x", dispatch.WithStreamWindow(0))
	assert.ErrorContains(t, err, "WithStreamWindow")
	srv := dispatch.NewServer(dispatch.WithStreamWindow(-1))
	l, err := memory.New().Listen("")
	require.NoError(t, err)
	defer l.Close()
	assert.ErrorContains(t, srv.Start(l), "WithStreamWindow")
}

// HandleStream's registration rules are Handle's.
func TestHandleStreamRegistration(t *testing.T) {
	srv, _ := streamServer(t)
	fn := func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error { return nil }
	assert.ErrorContains(t, dispatch.HandleStream(srv, "S.Echo", fn), "already registered")
	assert.ErrorContains(t, dispatch.HandleStream(srv, "S.Unary", fn), "already registered")
	assert.ErrorContains(t, dispatch.HandleStream(srv, "NoDot", fn), "not of the form")
	assert.ErrorContains(t, dispatch.HandleStream[Num, Num](srv, "S.Nil", nil), "nil function")
	assert.ErrorContains(t, dispatch.HandleStream(srv, "S.X", fn, dispatch.Borrows("Y")), "Borrows names Y")
	assert.Contains(t, srv.Methods(), "S.Echo")
}
