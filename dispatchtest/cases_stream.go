package dispatchtest

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// The stream cases: every shape, its end, its failures, flow control,
// metadata both ways, and what the caller leaving does to the handler.

// stream is a StreamCall of method whose messages are In and Out.
func stream[In, Out any](method string) StreamCall {
	return StreamCall{Method: method, In: reflect.TypeFor[In](), Out: reflect.TypeFor[Out]()}
}

// callNums makes a server-streaming call of method with args, collecting
// the Nums the handler sends.
func callNums(e *env, ctx context.Context, method string, args *Num) ([]Num, error) {
	var got []Num
	err := e.caller.CallStream(ctx, stream[Num, Num](method), args, func(m any) bool {
		got = append(got, *m.(*Num))
		return true
	})
	return got, err
}

// openNums opens a stream of Nums both ways of method; it is closed when
// the case ends.
func openNums(t *testing.T, e *env, ctx context.Context, method string) ClientStream {
	s, err := e.caller.OpenStream(ctx, stream[Num, Num](method))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// recvAll receives the messages of s until its end, returning them and
// its failure (nil at a clean end).
func recvAll[T any](s ClientStream) ([]T, error) {
	var got []T
	for {
		var m T
		err := s.Recv(&m)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, m)
	}
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

// handlerSaid is what a handler that reports its end said.
func handlerSaid(t *testing.T, pr *streamProbe) string {
	select {
	case err := <-pr.ended:
		return fmt.Sprint(err)
	case <-time.After(waitLong):
		t.Error("the handler did not return")
		return "<still running>"
	}
}

// want is a check of the whole outcome.
func want(w Outcome) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) { assert.Equal(t, w, o) }
}

// streamOutcome is the outcome of a stream case: what it got, and its
// failure's words and code (not its Go type, which a case of streams does
// not compare).
func streamOutcome(got string, err error) Outcome {
	o := Outcome{Reply: got}
	observeErr(&o, err)
	o.ErrType = ""
	return o
}

// streamMetadataRefused: a stream whose opening frame, its metadata, is
// over what a frame may carry fails to open, on every path, in both of
// CallStream's ways (a context that cannot end, and one that can) and
// OpenStream's, with the error the network's Client gives.
func streamMetadataRefused(md dispatch.Metadata) func(t *testing.T, e *env) Outcome {
	return func(t *testing.T, e *env) Outcome {
		var words []string
		for _, base := range []context.Context{context.Background(), t.Context()} {
			sc := stream[Num, Num]("S.Count")
			sc.Metadata = md
			var got []Num
			err := e.caller.CallStream(base, sc, &Num{3}, func(m any) bool { got = append(got, *m.(*Num)); return true })
			words = append(words, fmt.Sprint("CallStream: ", summary(got), ", ", failure(err)))
			so := stream[Num, Num]("S.Echo")
			so.Metadata = md
			s, err := e.caller.OpenStream(base, so)
			if s != nil {
				s.Close()
			}
			words = append(words, fmt.Sprint("OpenStream: ", failure(err)))
		}
		return Outcome{Extra: strings.Join(words, "; ")}
	}
}

// wantStreamRefused wants every way refused over tooLarge; OpenStream's
// opening frame, which asks for the ready frame (Established), over
// openTooLarge.
func wantStreamRefused(tooLarge, openTooLarge string) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
		parts := strings.Split(o.Extra, "; ")
		require.Len(t, parts, 4)
		for i, p := range parts {
			method, shape, over := "S.Count", "CallStream: none, ", tooLarge
			if i%2 == 1 {
				method, shape, over = "S.Echo", "OpenStream: ", openTooLarge
			}
			assert.Regexp(t, "^"+shape+"dispatch: opening a stream of "+method+": transport: frame too large: "+over+
				` \(frame too large: true, shut down: false\)$`, p)
		}
	}
}

var streamCases = []testCase{
	{name: "server to client, 1000", stream: true, run: func(t *testing.T, e *env) Outcome {
		got, err := callNums(e, context.Background(), "S.Count", &Num{1000})
		return streamOutcome(summary(got), err)
	}, check: want(Outcome{Reply: "0…999"})},

	{name: "server to client, ctx that can end", stream: true, run: func(t *testing.T, e *env) Outcome {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		got, err := callNums(e, ctx, "S.Count", &Num{1000})
		return streamOutcome(summary(got), err)
	}, check: want(Outcome{Reply: "0…999"})},

	{name: "client to server, 1000", stream: true, run: func(t *testing.T, e *env) Outcome {
		s := openNums(t, e, context.Background(), "S.Sum")
		for i := 1; i <= 1000; i++ {
			require.NoError(t, s.Send(&Num{i}))
		}
		require.NoError(t, s.CloseSend())
		got, err := recvAll[Num](s)
		return streamOutcome(fmt.Sprint(got), err)
	}, check: want(Outcome{Reply: "[{1000}]"})},

	{name: "echo, 1000", stream: true, run: func(t *testing.T, e *env) Outcome {
		s := openNums(t, e, context.Background(), "S.Echo")
		sent := make(chan error, 1)
		go func() {
			for i := range 1000 {
				if err := s.Send(&Num{i}); err != nil {
					sent <- err
					return
				}
			}
			sent <- s.CloseSend()
		}()
		got, err := recvAll[Num](s)
		o := streamOutcome(summary(got), err)
		o.Extra = fmt.Sprint(<-sent)
		return o
	}, check: want(Outcome{Reply: "0…999", Extra: "<nil>"})},

	{name: "echo in lock-step", stream: true, run: func(t *testing.T, e *env) Outcome {
		s := openNums(t, e, context.Background(), "S.Echo")
		var got []Num
		for i := range 100 {
			require.NoError(t, s.Send(&Num{i}))
			var m Num
			require.NoError(t, s.Recv(&m))
			got = append(got, m)
		}
		require.NoError(t, s.CloseSend())
		var m Num
		return Outcome{Reply: summary(got), Extra: fmt.Sprint(s.Recv(&m))}
	}, check: want(Outcome{Reply: "0…99", Extra: "EOF"})},

	{name: "empty both ways", stream: true, run: func(t *testing.T, e *env) Outcome {
		s := openNums(t, e, context.Background(), "S.Echo")
		require.NoError(t, s.CloseSend())
		got, err := recvAll[Num](s)
		o := streamOutcome(summary(got), err)
		none, err := callNums(e, context.Background(), "S.Count", &Num{0})
		o.Extra = fmt.Sprint(summary(none), err)
		return o
	}, check: want(Outcome{Reply: "none", Extra: "none<nil>"})},

	{name: "caller breaks out", stream: true, run: func(t *testing.T, e *env) Outcome {
		n := 0
		err := e.caller.CallStream(context.Background(), stream[Num, Num]("S.Flood"), &Num{}, func(m any) bool {
			require.Equal(t, n, m.(*Num).N)
			n++
			return n < 3
		})
		return Outcome{Reply: fmt.Sprint(n), Extra: fmt.Sprint(err), Handler: handlerSaid(t, e.svc.probe)}
	}, check: want(Outcome{Reply: "3", Extra: "<nil>", Handler: "context canceled"})},

	{name: "Close mid-stream", stream: true, run: func(t *testing.T, e *env) Outcome {
		s := openNums(t, e, context.Background(), "S.Flood")
		var o Outcome
		for n := 0; ; {
			var m Num
			if err := s.Recv(&m); err != nil {
				o = streamOutcome("", err)
				break
			}
			if n++; n == 3 {
				require.NoError(t, s.Close())
			}
		}
		o.Handler = handlerSaid(t, e.svc.probe)
		o.Extra = fmt.Sprint(s.Send(&Num{}))
		return o
	}, check: want(Outcome{Err: dispatch.ErrStreamDone.Error(), Handler: "context canceled", Extra: dispatch.ErrStreamDone.Error()})},

	{name: "the handler's Send when the caller goes", stream: true, timed: true, run: func(t *testing.T, e *env) Outcome {
		// The caller stops receiving and closes while the handler
		// sends: in direct mode the handler's message may then be
		// lent and dropped unread, or refused as the stream stops.
		// Its Send fails as on the network, with its context's error.
		// Repeated, since which of those happens is the scheduler's
		// choice.
		said := make(map[string]int)
		for range 50 {
			s, err := e.caller.OpenStream(context.Background(), stream[Num, Num]("S.Lend"))
			require.NoError(t, err)
			var m Num
			require.NoError(t, s.Recv(&m))
			// Mostly the handler is then waiting with its next message
			// lent; without the pause, the Close comes mostly first.
			// Either way the outcome is the same.
			time.Sleep(time.Millisecond)
			require.NoError(t, s.Close())
			said[handlerSaid(t, e.svc.probe)]++
		}
		return Outcome{Handler: fmt.Sprint(said)}
	}, check: want(Outcome{Handler: "map[context canceled:50]"})},

	{name: "handler returns while the caller sends", stream: true, run: func(t *testing.T, e *env) Outcome {
		s := openNums(t, e, context.Background(), "S.Early")
		var sendErr error
		for i := 0; i < 1_000_000 && sendErr == nil; i++ {
			sendErr = s.Send(&Num{i})
		}
		got, err := recvAll[Num](s)
		o := streamOutcome(summary(got), err)
		o.Extra = fmt.Sprint(sendErr)
		return o
	}, check: want(Outcome{Reply: "none", Extra: dispatch.ErrStreamDone.Error()})},

	{name: "cancel mid-stream", stream: true, run: func(t *testing.T, e *env) Outcome {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		err := e.caller.CallStream(ctx, stream[Num, Num]("S.Flood"), &Num{}, func(m any) bool {
			if n++; n == 3 {
				cancel()
			}
			return true
		})
		o := streamOutcome("", err)
		o.Handler = handlerSaid(t, e.svc.probe)
		return o
	}, check: want(Outcome{Err: "S.Flood over <path>: context canceled", Code: dispatch.CodeCanceled, IsCanceled: true, Handler: "context canceled"})},

	{name: "deadline mid-stream", stream: true, timed: true, run: func(t *testing.T, e *env) Outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		got, err := callNums(e, ctx, "S.Wait", &Num{})
		o := streamOutcome(fmt.Sprint(got), err)
		o.Handler = handlerSaid(t, e.svc.probe)
		return o
	}, check: want(Outcome{Reply: "[{7}]", Err: "S.Wait over <path>: context deadline exceeded", Code: dispatch.CodeDeadlineExceeded, IsDeadline: true,
		Handler: "context deadline exceeded"})},

	{name: "handler error after 5 messages", stream: true, run: func(t *testing.T, e *env) Outcome {
		got, err := callNums(e, context.Background(), "S.Fail", &Num{5})
		return streamOutcome(summary(got), err)
	}, check: want(Outcome{Reply: "0…4", Err: "no more", Code: dispatch.CodePermissionDenied})},

	{name: "panic", stream: true, run: func(t *testing.T, e *env) Outcome {
		got, err := callNums(e, context.Background(), "S.Panic", &Num{})
		return streamOutcome(fmt.Sprint(got), err)
	}, check: want(Outcome{Reply: "[{1}]", Err: "dispatch: panic in S.Panic: boom", Code: dispatch.CodeInternal})},

	{name: "slow consumer", stream: true, timed: true, run: func(t *testing.T, e *env) Outcome {
		pr := e.svc.probe
		s := openNums(t, e, context.Background(), "S.Flood")
		// The caller does not receive: the handler must stall in Send,
		// its count still (in a bubble, once everything in it is
		// blocked; elsewhere for a tenth of a second, which a loaded
		// machine may not give it: it is then counted sooner, which the
		// bound below allows).
		last := int64(-1)
		for {
			e.settle(100 * time.Millisecond)
			n := pr.sent.Load()
			if n == last {
				break
			}
			last = n
		}
		require.NoError(t, s.Close())
		o := Outcome{Handler: handlerSaid(t, pr)}
		// A Num encodes in 4 bytes ({"N": n} for small n, more later):
		// the window of 256 KiB holds at most 65,536 of them.
		o.Extra = fmt.Sprint(last <= dispatch.DefaultStreamWindow/4+2)
		return o
	}, check: want(Outcome{Handler: "context canceled", Extra: "true"})},

	{name: "metadata both ways", stream: true, run: func(t *testing.T, e *env) Outcome {
		var md dispatch.Metadata
		sc := stream[Num, string]("S.Meta")
		sc.Metadata = dispatch.Metadata{"k": "v"}
		sc.ReplyMetadata = &md
		s, err := e.caller.OpenStream(context.Background(), sc)
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.CloseSend())
		got, err := recvAll[string](s)
		o := streamOutcome(fmt.Sprint(got), err)
		o.Extra = fmt.Sprint(md)
		return o
	}, check: want(Outcome{Reply: "[v true S.Meta]", Extra: "map[r:reply]"})},

	{name: "reply metadata left alone when the caller breaks", stream: true, timed: true, run: func(t *testing.T, e *env) Outcome {
		md := dispatch.Metadata{"was": "here"}
		sc := stream[Num, Num]("S.Wait")
		sc.ReplyMetadata = &md
		err := e.caller.CallStream(context.Background(), sc, &Num{}, func(any) bool { return false })
		o := Outcome{Handler: handlerSaid(t, e.svc.probe), Extra: fmt.Sprint(err)}
		// The handler's end is on its way: were it delivered to the
		// capture, it would be by now (in a bubble, certainly).
		e.settle(20 * time.Millisecond)
		o.Reply = fmt.Sprint(md)
		return o
	}, check: want(Outcome{Handler: "context canceled", Extra: "<nil>", Reply: "map[was:here]"})},

	{name: "messages near the frame limit", stream: true, run: func(t *testing.T, e *env) Outcome {
		big := make([]byte, e.limit()-64)
		for i := range big {
			big[i] = byte(i)
		}
		s, err := e.caller.OpenStream(context.Background(), stream[[]byte, []byte]("S.Bytes"))
		require.NoError(t, err)
		defer s.Close()
		sent := make(chan error, 1)
		go func() {
			for range 3 {
				if err := s.Send(&big); err != nil {
					sent <- err
					return
				}
			}
			sent <- s.CloseSend()
		}()
		n, same := 0, true
		var o Outcome
		for {
			var m []byte
			err := s.Recv(&m)
			if err != nil {
				if err != io.EOF {
					o = streamOutcome("", err)
				}
				break
			}
			n++
			same = same && string(m) == string(big)
		}
		o.Reply = fmt.Sprint(n, same)
		o.Extra = fmt.Sprint(<-sent)
		return o
	}, check: want(Outcome{Reply: "3 true", Extra: "<nil>"})},

	{name: "unknown stream method", stream: true, run: func(t *testing.T, e *env) Outcome {
		_, err := callNums(e, context.Background(), "S.Nope", &Num{})
		o := streamOutcome("", err)
		_, err = callNums(e, context.Background(), "Nope.Nope", &Num{})
		o.Extra = fmt.Sprint(err)
		return o
	}, check: want(Outcome{Err: "rpc: can't find method S.Nope", Code: dispatch.CodeNotFound, Extra: "rpc: can't find service Nope.Nope"})},

	{name: "a stream opened on a unary method", stream: true, run: func(t *testing.T, e *env) Outcome {
		s := openNums(t, e, context.Background(), "S.Unary") // the server says so, at the first Recv
		_ = s.Send(&Num{1})
		_, err := recvAll[Num](s)
		return streamOutcome("", err)
	}, check: want(Outcome{Err: "dispatch: S.Unary is not a streaming method; call it with Call", Code: dispatch.CodeInvalidArgument})},

	{name: "a unary call of a streaming method", run: func(t *testing.T, e *env) Outcome {
		var reply Num
		err := e.call(context.Background(), "S.Count", &Num{1}, &reply)
		return streamOutcome(fmt.Sprint(reply), err)
	}, check: want(Outcome{Reply: "{0}", Err: "dispatch: S.Count is a streaming method; call it with OpenStream or CallStream",
		Code: dispatch.CodeInvalidArgument})},

	{name: "concurrent streams", stream: true, run: func(t *testing.T, e *env) Outcome {
		n := 200
		if !raceEnabled {
			n = 1000
		}
		var wg sync.WaitGroup
		var bad atomic.Int32
		for g := range n {
			wg.Go(func() {
				got, err := callNums(e, context.Background(), "S.Count", &Num{10 + g%10})
				if err != nil || summary(got) != fmt.Sprintf("0…%d", 9+g%10) {
					bad.Add(1)
				}
			})
		}
		wg.Wait()
		return Outcome{Extra: fmt.Sprint(bad.Load(), " failed")}
	}, check: want(Outcome{Extra: "0 failed"})},

	{name: "handler error with details", stream: true, run: func(t *testing.T, e *env) Outcome {
		require.NoError(t, registerStreamDetails(e.srv))
		got, err := callNums(e, context.Background(), "SD.FailDetail", &Num{2})
		o := streamOutcome(fmt.Sprint(got), err)
		o.Extra = describeDetails(err)
		return o
	}, check: want(Outcome{Reply: "[{2}]", Err: "detail: try later", Code: dispatch.CodeUnavailable,
		Extra: "details [dispatchtest.RetryInfo 0 1 <nil>, dispatchtest.RetryInfo 1 1 <nil>]; As: 0 true"})},

	{name: "handler error with details over the bound", stream: true, run: func(t *testing.T, e *env) Outcome {
		require.NoError(t, registerStreamDetails(e.srv))
		got, err := callNums(e, context.Background(), "SD.FailDetail", &Num{14})
		o := streamOutcome(fmt.Sprint(got), err)
		o.Extra = describeDetails(err)
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Equal(t, "[{14}]", o.Reply)
		assert.Equal(t, dispatch.CodeInternal, o.Code)
		assert.Regexp(t, `^dispatch: error details are too large: \d+ bytes, limit 65536 \(the error was: detail: try later\)$`, o.Err)
		assert.Equal(t, "details []; As: 0 false", o.Extra)
	}},

	{name: "opening metadata of 1,100 entries", stream: true, run: streamMetadataRefused(manyEntries(1100)),
		check: wantStreamRefused("1104 header entries, limit 1024", "1105 header entries, limit 1024")},
	{name: "opening metadata over the frame limit", stream: true, run: streamMetadataRefused(bigMetadata()),
		check: wantStreamRefused(`\d+ bytes, limit 4194304`, `\d+ bytes, limit 4194304`)},
}

// registerStreamDetails registers SD.FailDetail, which sends one message,
// then fails with errTryLater and n details of 5,000 bytes each.
func registerStreamDetails(srv *dispatch.Server) error {
	return dispatch.HandleStream(srv, "SD.FailDetail", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		var n int
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			n = m.N
			break
		}
		if err := s.Send(&Num{n}); err != nil {
			return err
		}
		e := errTryLater
		for i := range n {
			e = e.WithDetail(RetryInfo{After: i, Reasons: []string{strings.Repeat("x", 5000)}})
		}
		return e
	}, dispatch.Borrows())
}
