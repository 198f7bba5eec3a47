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

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// Tests of limits and of connection failures that need a Server of their
// own: one with other frame limits, or one they close. (Their cases on
// every path are the conformance suite's, dispatchtest.)

// limitedPair serves a new Server, made with opts, on the kind of path e
// is, its listener limited to serverLimit bytes a frame, and dials it with
// a Client whose transport is limited to clientLimit (0: the default). The
// memory transport has one limit for both ends: a case that needs two
// skips it.
func limitedPair(t *testing.T, e *env, serverLimit, clientLimit int, opts ...dispatch.ServerOption) (*dispatch.Server, *dispatch.Client) {
	srv := dispatch.NewServer(opts...)
	if e.netrpc != nil {
		return netrpcServe(t, e.netrpc, srv, serverLimit, clientLimit)
	}
	var srvTr, cliTr transport.Transport
	listen := "127.0.0.1:0"
	var copts []dispatch.ClientOption
	switch e.tr.(type) {
	case *memory.Transport:
		if serverLimit != clientLimit {
			t.Skip("memory has one frame limit for both ends")
		}
		m := memory.New(memoryLimit(serverLimit)...)
		srvTr, cliTr, listen = m, m, ""
	case *mux.Transport:
		s, c := mux.New(muxLimit(serverLimit)...), mux.New(muxLimit(clientLimit)...)
		t.Cleanup(func() { s.Close(); c.Close() })
		srvTr, cliTr = s, c
	default: // tcp, and the shortcut over tcp
		srvTr, cliTr = tcp.New(tcpLimit(serverLimit)...), tcp.New(tcpLimit(clientLimit)...)
		copts = e.opts
	}
	addr := serve(t, srv, srvTr, listen)
	c, err := dispatch.Dial(context.Background(), cliTr, addr, copts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func tcpLimit(n int) []tcp.Option {
	if n == 0 {
		return nil
	}
	return []tcp.Option{tcp.WithMaxFrameSize(n)}
}

func muxLimit(n int) []mux.Option {
	if n == 0 {
		return nil
	}
	return []mux.Option{mux.WithMaxFrameSize(n)}
}

func memoryLimit(n int) []memory.Option {
	if n == 0 {
		return nil
	}
	return []memory.Option{memory.WithMaxFrameSize(n)}
}

// failure words an error for comparison across paths: its text, and
// whether it is a frame-limit error or a connection failure.
func failure(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%v (frame too large: %v, shut down: %v)", pathless(err.Error()), errors.Is(err, transport.ErrFrameTooLarge), errors.Is(err, dispatch.ErrShutdown))
}

const theServerClosed = "connection is shut down: the server closed the connection (frame too large: false, shut down: true)"

// A stream that loses its connection — the Server closed, or a frame over
// the receiver's limit, which makes the receiver drop the connection —
// fails with an error that matches ErrShutdown, names the method and the
// path, and says why, in the same words on every path; memory, with one limit for both ends, has only the
// first. The methods do not borrow, so the direct path measures their
// messages as copy mode does.
func TestStreamLostConnectionSaysWhy(t *testing.T) {
	const small = 64 << 10
	register := func(t *testing.T, srv *dispatch.Server) {
		// Make sends a message of each size n it is given; for -n, it sets
		// reply metadata of n bytes instead.
		require.NoError(t, dispatch.HandleStream(srv, "L.Make", func(ctx context.Context, s *dispatch.ServerStream[int, []byte]) error {
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
		}))
		// Sink takes messages and sends back their count.
		require.NoError(t, dispatch.HandleStream(srv, "L.Sink", func(ctx context.Context, s *dispatch.ServerStream[[]byte, int]) error {
			n := 0
			for _, err := range s.Recv() {
				if err != nil {
					return err
				}
				n++
			}
			return s.Send(&n)
		}))
		require.NoError(t, dispatch.HandleStream(srv, "L.Hold", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
			if err := s.Send(new(1)); err != nil {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		}))
	}
	// stream runs L.Make with the size n, as CallStream (its fast way, a
	// context that cannot end, and its other) or as OpenStream.
	stream := func(t *testing.T, c *dispatch.Client, shape string, n int) string {
		ctx := context.Background()
		if shape == "CallStream, ctx can end" {
			ctx = t.Context()
		}
		if shape != "OpenStream" {
			got, err := collect(dispatch.CallStream[int, []byte](ctx, c, "L.Make", &n))
			return fmt.Sprint(len(got), " messages, ", failure(err))
		}
		s, err := dispatch.OpenStream[int, []byte](ctx, c, "L.Make")
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.Send(&n))
		// The handler's answer may have dropped the connection before
		// CloseSend: on the network it then fails, as the connection
		// did (the stream's end below says how).
		if err := s.CloseSend(); err != nil {
			require.ErrorIs(t, err, dispatch.ErrShutdown)
		}
		got, err := collect(s.Recv())
		return fmt.Sprint(len(got), " messages, ", failure(err))
	}
	type outcome struct{ Results []string }
	peerAnnounced := func(n int) string {
		return fmt.Sprintf("L.Make over <path>: connection is shut down: transport: frame too large: peer announced %d bytes, limit %d (frame too large: true, shut down: true)", n, small)
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			var o outcome
			add := func(what, got string) { o.Results = append(o.Results, what+": "+got) }

			// The Server closed mid-stream.
			srv, c := limitedPair(t, e, 0, 0)
			register(t, srv)
			s, err := dispatch.OpenStream[int, int](context.Background(), c, "L.Hold")
			require.NoError(t, err)
			next, stop := iter.Pull2(s.Recv())
			_, err, _ = next()
			require.NoError(t, err)
			require.NoError(t, srv.Close())
			_, err, _ = next()
			stop()
			s.Close()
			add("server closed", failure(err))

			if _, ok := e.tr.(*memory.Transport); !ok {
				// The caller's message over the Server's limit, many
				// times: the handler's Recv ends as the connection is
				// lost, and whether it returns before the caller's side
				// has ended must not change what the caller sees.
				srv, c = limitedPair(t, e, small, 0)
				register(t, srv)
				first := ""
				for i := range 100 {
					s, err := dispatch.OpenStream[[]byte, int](context.Background(), c, "L.Sink")
					require.NoError(t, err)
					sendErr := s.Send(new(make([]byte, small+100)))
					got, err := collect(s.Recv())
					s.Close()
					// The Send may fail or not: the network's sends no
					// more than queue the message.
					if sendErr != nil && sendErr.Error() != err.Error() {
						t.Errorf("try %d: Send failed with %v, the stream with %v", i, sendErr, err)
					}
					r := fmt.Sprint(len(got), " messages, ", failure(err))
					if i == 0 {
						first = r
						add("caller's message over the server's limit", r)
					} else if r != first {
						add(fmt.Sprint("caller's message over the server's limit, try ", i), r)
						break
					}
				}

				// The opening frame, its metadata, over the Server's limit.
				ctx := dispatch.WithMetadata(context.Background(), dispatch.Metadata{"big": strings.Repeat("m", small)})
				got, err := collect(dispatch.CallStream[[]byte, int](ctx, c, "L.Sink", new([]byte("x"))))
				add("opening frame over the server's limit", fmt.Sprint(len(got), " messages, ", failure(err)))

				srv, c = limitedPair(t, e, 0, small)
				register(t, srv)
				for _, shape := range []string{"CallStream", "CallStream, ctx can end", "OpenStream"} {
					// The handler's message over the Client's limit.
					add(shape+", handler's message over the client's limit", stream(t, c, shape, small+100))
					// The end of the stream, its metadata, over the Client's limit.
					add(shape+", end over the client's limit", stream(t, c, shape, -(small+100)))
				}
			}
			want := outcome{Results: []string{"server closed: L.Hold over <path>: " + theServerClosed}}
			if _, ok := e.tr.(*memory.Transport); !ok {
				// The frames: the message's (raw bytes, as sent) and the
				// end's, which carries the metadata.
				msg := peerAnnounced(small + 100 + frame.HeaderLen(map[string]string{"Seq": "0", "Stream": "msg"}))
				end := peerAnnounced(frame.HeaderLen(map[string]string{"Seq": "0", "Stream": "end", "Md-big": strings.Repeat("m", small+100)}))
				want.Results = append(want.Results,
					"caller's message over the server's limit: 0 messages, L.Sink over <path>: "+theServerClosed,
					"opening frame over the server's limit: 0 messages, L.Sink over <path>: "+theServerClosed)
				for _, shape := range []string{"CallStream", "CallStream, ctx can end", "OpenStream"} {
					want.Results = append(want.Results,
						shape+", handler's message over the client's limit: 0 messages, "+msg,
						shape+", end over the client's limit: 0 messages, "+end)
				}
			}
			assert.Equal(t, want, o)
		})
	}
}
