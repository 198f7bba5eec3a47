package dispatch_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// A watch, in the shape docs/calls.md promises Open for: a handler that
// subscribes to an in-process publish/subscribe on its first line, then
// says it is ready; the caller publishes as soon as Open (or Established)
// returns, and must find the handler subscribed. The handlers below are
// registered by streamServer; the rows of streamCases that run them are
// the ones named "a watch is in place …".

// bus is an in-process publish/subscribe of ints by topic: what a watch
// subscribes to. An event published when nobody is subscribed is lost, as
// a change made before a watch is in place is.
type bus struct {
	mu   sync.Mutex
	subs map[int][]chan int
}

// subscribe subscribes to topic; stop ends the subscription.
func (b *bus) subscribe(topic int) (events <-chan int, stop func()) {
	ch := make(chan int, 1)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[int][]chan int)
	}
	b.subs[topic] = append(b.subs[topic], ch)
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		subs := b.subs[topic]
		for i, c := range subs {
			if c == ch {
				b.subs[topic] = append(subs[:i], subs[i+1:]...)
				break
			}
		}
		if len(b.subs[topic]) == 0 {
			delete(b.subs, topic)
		}
	}
}

// publish sends v to topic's subscribers and reports how many it reached:
// 0 is a change the watch missed.
func (b *bus) publish(topic, v int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.subs[topic] {
		select {
		case ch <- v:
		default:
		}
	}
	return len(b.subs[topic])
}

// The watches: a server stream whose request is the topic; a bidirectional
// and a client stream, which subscribe before reading anything, to the
// topic of the caller's metadata.
var (
	watchServer   = dispatch.NewServerStreamMethod[Num, Num]("S.Watch")
	watchSnapshot = dispatch.NewServerStreamMethod[Num, Num]("S.WatchSnapshot")
	watchBidi     = dispatch.NewBidiStreamMethod[Num, Num]("S.WatchBidi")
	watchClient   = dispatch.NewClientStreamMethod[Num, Num]("S.WatchClient")
)

// topicOf is the topic a caller put in its metadata.
func topicOf(ctx context.Context) int {
	n, _ := strconv.Atoi(dispatch.MetadataFrom(ctx)["topic"])
	return n
}

// await returns the next event of ch, or ctx's error.
func await(ctx context.Context, ch <-chan int) (int, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func registerWatches(t testing.TB, srv *dispatch.Server, b *bus) {
	require.NoError(t, watchServer.Handle(srv, func(ctx context.Context, q *Num, out dispatch.Sender[Num]) error {
		events, stop := b.subscribe(q.N)
		defer stop()
		out.Ready()
		v, err := await(ctx, events)
		if err != nil {
			return err
		}
		return out.Send(&Num{v})
	}, dispatch.Borrows()))
	// The snapshot watch says it is ready by sending its first message,
	// the state it starts from (-1).
	require.NoError(t, watchSnapshot.Handle(srv, func(ctx context.Context, q *Num, out dispatch.Sender[Num]) error {
		events, stop := b.subscribe(q.N)
		defer stop()
		if err := out.Send(&Num{-1}); err != nil {
			return err
		}
		v, err := await(ctx, events)
		if err != nil {
			return err
		}
		return out.Send(&Num{v})
	}, dispatch.Borrows()))
	require.NoError(t, watchBidi.Handle(srv, func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		events, stop := b.subscribe(topicOf(ctx))
		defer stop()
		s.Ready()
		v, err := await(ctx, events)
		if err != nil {
			return err
		}
		return s.Send(&Num{v})
	}, dispatch.Borrows()))
	require.NoError(t, watchClient.Handle(srv, func(ctx context.Context, in dispatch.Receiver[Num], reply *Num) error {
		events, stop := b.subscribe(topicOf(ctx))
		defer stop()
		in.Ready()
		v, err := await(ctx, events)
		if err != nil {
			return err
		}
		for _, err := range in.Recv() {
			if err != nil {
				return err
			}
		}
		reply.N = v
		return nil
	}, dispatch.Borrows()))
}

// watchRounds is how many watches each row opens, one after another.
const watchRounds = 200

// watchRace returns a row's run: watchRounds times, open a watch of topic
// i (open returns once it is in place, or fails), publish i at once, and
// have get return what the watch saw. A publish that reaches nobody is a
// missed change; the stream is then closed, which ends its handler.
func watchRace(open func(ctx context.Context, c *dispatch.Client, topic int) (get func() (int, error), closeIt func(), err error)) func(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
	return func(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
		missed := 0
		var o streamOutcome
		for i := 1; i <= watchRounds; i++ {
			ctx := dispatch.WithMetadata(t.Context(), dispatch.Metadata{"topic": strconv.Itoa(i)})
			get, closeIt, err := open(ctx, c, i)
			if err != nil {
				observeErr(&o, err)
				break
			}
			if pr.bus.publish(i, i) == 0 {
				missed++
				closeIt()
				continue
			}
			v, err := get()
			closeIt()
			if err != nil || v != i {
				observeErr(&o, err)
				o.Got = fmt.Sprintf("round %d: %d", i, v)
				break
			}
		}
		o.Extra = fmt.Sprintf("missed %d of %d", missed, watchRounds)
		return o
	}
}

// wantNoMiss is the outcome of every watch row: each change reached its
// watch.
func wantNoMiss(t *testing.T, o streamOutcome) {
	require.Equal(t, streamOutcome{Extra: fmt.Sprintf("missed 0 of %d", watchRounds)}, o)
}

// openWatch opens a server-streaming watch of m with Open; skip is the
// number of messages that come before the event (a snapshot).
func openWatch(m *dispatch.ServerStreamMethod[Num, Num], skip int) func(ctx context.Context, c *dispatch.Client, topic int) (func() (int, error), func(), error) {
	return func(ctx context.Context, c *dispatch.Client, topic int) (func() (int, error), func(), error) {
		s, err := m.Open(ctx, c, Num{topic})
		if err != nil {
			return nil, nil, err
		}
		get := func() (int, error) {
			got, err := collect(s.Recv())
			if err != nil {
				return 0, err
			}
			if len(got) != skip+1 {
				return 0, fmt.Errorf("got %v", got)
			}
			return got[skip].N, nil
		}
		return get, func() { s.Close() }, nil
	}
}

// openBidiWatch opens the bidirectional watch and waits for Established.
func openBidiWatch(ctx context.Context, c *dispatch.Client, _ int) (func() (int, error), func(), error) {
	s, err := watchBidi.Open(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Established(); err != nil {
		s.Close()
		return nil, nil, err
	}
	get := func() (int, error) {
		if err := s.CloseSend(); err != nil {
			return 0, err
		}
		got, err := collect(s.Recv())
		if err != nil || len(got) != 1 {
			return 0, fmt.Errorf("got %v, %v", got, err)
		}
		return got[0].N, nil
	}
	return get, func() { s.Close() }, nil
}

// openClientWatch opens the client-streaming watch, sends a message and
// waits for Established.
func openClientWatch(ctx context.Context, c *dispatch.Client, _ int) (func() (int, error), func(), error) {
	s, err := watchClient.Open(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Send(&Num{1}); err != nil {
		s.Close()
		return nil, nil, err
	}
	if err := s.Established(); err != nil {
		s.Close()
		return nil, nil, err
	}
	get := func() (int, error) {
		r, err := s.CloseAndRecv()
		return r.N, err
	}
	return get, func() { s.Close() }, nil
}

// The wire of readiness (WIRE.md, Streams, Readiness), seen by a raw
// caller: a server that knows readiness tells it to a caller whose open
// frame carries Ready — by a ready frame when the handler is ready before
// its first message, by that message or the end otherwise, never after
// either — and sends any other caller (an earlier release's) exactly the
// frames it sent before readiness existed.
func TestStreamReadyWire(t *testing.T) {
	srv := dispatch.NewServer()
	late := make(chan *dispatch.ServerStream[Num, Num], 1)
	for name, steps := range map[string]string{
		"W.ReadyFirst": "RRss",
		"W.SendFirst":  "sR",
		"W.Return":     "",
		"W.Fail":       "f",
		"W.Late":       "L",
	} {
		require.NoError(t, dispatch.HandleStream(srv, name, func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
			for _, step := range steps {
				switch step {
				case 'R':
					s.Ready()
				case 's':
					if err := s.Send(&Num{1}); err != nil {
						return err
					}
				case 'f':
					return &dispatch.Error{Code: dispatch.CodeAborted, Message: "no"}
				case 'L':
					late <- s // Ready after the handler has returned
				}
			}
			return nil
		}))
	}
	require.NoError(t, dispatch.Handle(srv, "W.Ping", func(ctx context.Context, args *Num, reply *Num) error { return nil }))
	sock := fuzzServe(t, srv)
	seq := 0
	// frames opens a stream of name and returns the kinds of the frames
	// the server sends for it, up to its end.
	frames := func(name string, ready bool) []string {
		seq++
		s := strconv.Itoa(seq)
		open := map[string]string{"Service-Method": name, "Seq": s, "Stream": "open", "Window": "65536"}
		if ready {
			open["Ready"] = "1"
		}
		require.NoError(t, sock.Send(&transport.Message{Header: open}))
		require.NoError(t, sock.Send(&transport.Message{Header: map[string]string{"Seq": s, "Stream": "end"}}))
		var got []string
		for {
			var m transport.Message
			require.NoError(t, sock.Recv(&m))
			require.Equal(t, s, m.Header["Seq"])
			kind := m.Header["Stream"]
			if r, ok := m.Header["Ready"]; ok {
				kind += "+Ready:" + r
			}
			got = append(got, kind)
			if m.Header["Stream"] == "end" {
				return got
			}
		}
	}
	for _, tc := range []struct {
		name         string
		old, waiting []string
	}{
		{"W.ReadyFirst", []string{"window", "msg", "msg", "end"}, []string{"window+Ready:1", "ready", "msg", "msg", "end"}},
		{"W.SendFirst", []string{"window", "msg", "end"}, []string{"window+Ready:1", "msg", "end"}},
		{"W.Return", []string{"window", "end"}, []string{"window+Ready:1", "end"}},
		{"W.Fail", []string{"window", "end"}, []string{"window+Ready:1", "end"}},
		{"W.Missing", []string{"end"}, []string{"end"}},
	} {
		assert.Equal(t, tc.old, frames(tc.name, false), "%s, a caller that does not ask", tc.name)
		assert.Equal(t, tc.waiting, frames(tc.name, true), "%s, a caller that asks", tc.name)
	}

	// A Ready after the end sends nothing: the next frame on the
	// connection is a call's reply.
	assert.Equal(t, []string{"window+Ready:1", "end"}, frames("W.Late", true))
	(<-late).Ready()
	require.NoError(t, sock.Send(&transport.Message{Header: map[string]string{"Service-Method": "W.Ping", "Seq": "1000"}}))
	var m transport.Message
	require.NoError(t, sock.Recv(&m))
	assert.Equal(t, map[string]string{"Service-Method": "W.Ping", "Seq": "1000"}, m.Header)
}

// Readiness passes through stream interceptors on both ends: the watches
// are in place when Open and Established return, on every path. (A Client
// of replicas waits as its replica's Client does: TestTypedServerStreamOpen
// and TestTypedStreamEstablished run on one.)
func TestStreamReadyThroughInterceptors(t *testing.T) {
	pass := func(ctx context.Context, method string) (context.Context, func(error), error) {
		return context.WithValue(ctx, passKey{}, method), func(error) {}, nil
	}
	rows := map[string]func(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome{
		"server":        watchRace(openWatch(watchServer, 0)),
		"bidirectional": watchRace(openBidiWatch),
		"client":        watchRace(openClientWatch),
	}
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			srv, pr := streamServer(t, dispatch.WithStreamInterceptors(pass))
			c, _ := dialPath(t, p, srv, dispatch.WithStreamInterceptors(pass))
			for name, run := range rows {
				t.Run(name, func(t *testing.T) { wantNoMiss(t, run(t, c, pr)) })
			}
		})
	}
}

type passKey struct{}
