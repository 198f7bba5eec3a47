package dispatchtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/frame"
)

// A stream that loses its connection — the Server closed, or a frame over
// the receiver's limit, which makes the receiver drop the connection —
// fails with an error that matches ErrShutdown, names the method and the
// path, and says why, in the same words on every path. The methods do not
// borrow, so the direct path measures their messages as copy mode does.

// smallFrame is the frame limit of the end a case makes small.
const smallFrame = 64 << 10

// registerLost registers the streams of these cases on srv.
func registerLost(srv *dispatch.Server) error {
	return errors.Join(
		// Make sends a message of each size n it is given; for -n, it
		// sets reply metadata of n bytes instead.
		dispatch.HandleStream(srv, "L.Make", func(ctx context.Context, s *dispatch.ServerStream[int, []byte]) error {
			last := 0
			for n, err := range s.Recv() {
				if err != nil {
					return err
				}
				if last = *n; last > 0 {
					if err := s.Send(new(make([]byte, last))); err != nil {
						return err
					}
				}
			}
			if last < 0 {
				return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"big": strings.Repeat("m", -last)})
			}
			return nil
		}),
		// Sink takes messages and sends back their count.
		dispatch.HandleStream(srv, "L.Sink", func(ctx context.Context, s *dispatch.ServerStream[[]byte, int]) error {
			n := 0
			for _, err := range s.Recv() {
				if err != nil {
					return err
				}
				n++
			}
			return s.Send(&n)
		}),
		dispatch.HandleStream(srv, "L.Hold", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
			if err := s.Send(new(1)); err != nil {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		}),
	)
}

// lostShapes are the ways a caller reads a server stream: CallStream (its
// fast way, a context that cannot end, and its other) and OpenStream.
var lostShapes = []string{"CallStream", "CallStream, ctx can end", "OpenStream"}

// makeStream runs L.Make with the size n in the way shape says.
func makeStream(t *testing.T, c Caller, shape string, n int) string {
	ctx := context.Background()
	if shape == "CallStream, ctx can end" {
		ctx = t.Context()
	}
	sc := stream[int, []byte]("L.Make")
	if shape != "OpenStream" {
		got := 0
		err := c.CallStream(ctx, sc, &n, func(any) bool { got++; return true })
		return fmt.Sprint(got, " messages, ", failure(err))
	}
	s, err := c.OpenStream(ctx, sc)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Send(&n))
	// The handler's answer may have dropped the connection before
	// CloseSend: on the network it then fails, as the connection did (the
	// stream's end below says how).
	if err := s.CloseSend(); err != nil {
		require.ErrorIs(t, err, dispatch.ErrShutdown)
	}
	got, err := recvAll[[]byte](s)
	return fmt.Sprint(len(got), " messages, ", failure(err))
}

func peerAnnounced(n int) string {
	return fmt.Sprintf("L.Make over <path>: connection is shut down: transport: frame too large: peer announced %d bytes, limit %d (frame too large: true, shut down: true)", n, smallFrame)
}

var lostCases = []testCase{
	{name: "a stream whose Server closes says why", stream: true, run: func(t *testing.T, e *env) Outcome {
		require.NoError(t, registerLost(e.srv))
		s, err := e.caller.OpenStream(context.Background(), stream[int, int]("L.Hold"))
		require.NoError(t, err)
		defer s.Close()
		var m int
		require.NoError(t, s.Recv(&m))
		require.NoError(t, e.srv.Close())
		return Outcome{Extra: failure(s.Recv(&m))}
	}, check: want(Outcome{Extra: "L.Hold over <path>: " + theServerClosed})},

	{name: "a stream over a frame limit says why", stream: true, run: func(t *testing.T, e *env) Outcome {
		var results []string
		add := func(what, got string) { results = append(results, what+": "+got) }
		// The caller's message over the Server's limit, many times: the
		// handler's Recv ends as the connection is lost, and whether it
		// returns before the caller's side has ended must not change
		// what the caller sees.
		pair := e.again(Limits{Server: smallFrame})
		require.NoError(t, registerLost(pair.srv))
		first := ""
		for i := range 100 {
			s, err := pair.caller.OpenStream(context.Background(), stream[[]byte, int]("L.Sink"))
			require.NoError(t, err)
			sendErr := s.Send(new(make([]byte, smallFrame+100)))
			var r string
			if sendErr != nil && !errors.Is(sendErr, dispatch.ErrShutdown) {
				// Refused by the caller's own end (a path whose two ends
				// share the limit): the stream is not lost, and there is
				// no race to try again.
				s.Close()
				add("caller's message over the server's limit", "Send refused: "+failure(sendErr))
				break
			} else {
				got, err := recvAll[int](s)
				// The Send may fail or not: the network's sends no more
				// than queue the message.
				if sendErr != nil && sendErr.Error() != err.Error() {
					t.Errorf("try %d: Send failed with %v, the stream with %v", i, sendErr, err)
				}
				r = fmt.Sprint(len(got), " messages, ", failure(err))
			}
			s.Close()
			if i == 0 {
				first = r
				add("caller's message over the server's limit", r)
			} else if r != first {
				add(fmt.Sprint("caller's message over the server's limit, try ", i), r)
				break
			}
		}

		// The opening frame, its metadata, over the Server's limit.
		sc := stream[[]byte, int]("L.Sink")
		sc.Metadata = dispatch.Metadata{"big": strings.Repeat("m", smallFrame)}
		got := 0
		err := pair.caller.CallStream(context.Background(), sc, new([]byte("x")), func(any) bool { got++; return true })
		add("opening frame over the server's limit", fmt.Sprint(got, " messages, ", failure(err)))

		pair = e.again(Limits{Client: smallFrame})
		require.NoError(t, registerLost(pair.srv))
		for _, shape := range lostShapes {
			// The handler's message over the Client's limit.
			add(shape+", handler's message over the client's limit", makeStream(t, pair.caller, shape, smallFrame+100))
			// The end of the stream, its metadata, over the Client's limit.
			add(shape+", end over the client's limit", makeStream(t, pair.caller, shape, -(smallFrame+100)))
		}
		return Outcome{Extra: strings.Join(results, "\n")}
	}, check: func(t *testing.T, o Outcome) {
		// The frames: the message's (raw bytes, as sent) and the end's,
		// which carries the metadata.
		msg := peerAnnounced(smallFrame + 100 + frame.HeaderLen(map[string]string{"Seq": "0", "Stream": "msg"}))
		end := peerAnnounced(frame.HeaderLen(map[string]string{"Seq": "0", "Stream": "end", "Md-big": strings.Repeat("m", smallFrame+100)}))
		want := []string{
			"caller's message over the server's limit: 0 messages, L.Sink over <path>: " + theServerClosed,
			"opening frame over the server's limit: 0 messages, L.Sink over <path>: " + theServerClosed,
		}
		for _, shape := range lostShapes {
			want = append(want,
				shape+", handler's message over the client's limit: 0 messages, "+msg,
				shape+", end over the client's limit: 0 messages, "+end)
		}
		require.Equal(t, strings.Join(want, "\n"), o.Extra)
	}},
}
