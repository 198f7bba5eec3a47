package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
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

// Parity cases of limits, of connection failures and of metadata that need
// a Server of their own: one with other frame limits, or one they close.
// The rows are in parityCases (a few appended here, in init) and
// streamCases; what they share is here.

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

// manyEntries is request metadata of n entries, more than a frame's header
// block may hold (WIRE.md §1) when n is over 1,024.
func manyEntries(n int) dispatch.Metadata {
	md := make(dispatch.Metadata, n)
	for i := range n {
		md[fmt.Sprint("k", i)] = "v"
	}
	return md
}

// bigMetadata is request metadata of 5 MiB, over the default frame limit.
func bigMetadata() dispatch.Metadata { return dispatch.Metadata{"big": strings.Repeat("m", 5<<20)} }

// failure words an error for comparison across paths: its text, and
// whether it is a frame-limit error or a connection failure.
func failure(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%v (frame too large: %v, shut down: %v)", pathless(err.Error()), errors.Is(err, transport.ErrFrameTooLarge), errors.Is(err, dispatch.ErrShutdown))
}

// Request metadata the network refuses — too many entries for a frame, or
// too many bytes — is refused on every path, with the same error, whether
// the method borrows (Arith.Multiply) or not (Keeper.Len), and the handler
// never runs.
func requestMetadataRefused(md dispatch.Metadata) func(t *testing.T, e *env) outcome {
	return func(t *testing.T, e *env) outcome {
		ctx := dispatch.WithMetadata(context.Background(), md)
		var words []string
		for _, c := range []struct {
			method string
			args   any
		}{{"Arith.Multiply", Args{2, 3}}, {"Keeper.Len", Blob{Data: []byte("x")}}} {
			reply := intPtr(3)
			err := e.client.Call(ctx, c.method, c.args, reply)
			words = append(words, fmt.Sprint(failure(err), ", reply ", *reply))
		}
		o := observe(e, nil, nil)
		// What the interceptors logged holds the metadata: too long to
		// compare. observe took it from the recorder: a second take would
		// find nothing, whether the handler ran or not.
		ran := len(o.Interceptor) > 0
		o.Interceptor = nil
		if ran {
			o.Interceptor = []string{"the handler ran"}
		}
		o.Extra = strings.Join(words, "; ")
		return o
	}
}

func wantRequestRefused(tooLarge string) func(t *testing.T, o outcome) {
	return func(t *testing.T, o outcome) {
		assert.Empty(t, o.Interceptor, "the handler never runs")
		parts := strings.Split(o.Extra, "; ")
		require.Len(t, parts, 2)
		for i, method := range []string{"Arith.Multiply", "Keeper.Len"} {
			assert.Regexp(t, "^dispatch: arguments of "+method+": transport: frame too large: "+tooLarge+
				` \(frame too large: true, shut down: false\), reply 0$`, parts[i])
		}
	}
}

// serverClosedMidCall: a Server closed while its handler runs fails the
// call as the connection's end does.
func serverClosedMidCall(t *testing.T, e *env) outcome {
	srv, c := limitedPair(t, e, 0, 0)
	h := newHolder(t, srv)
	errc := callAsync(c, context.Background(), "Hold.Wait", intPtr(1), new(int))
	recv(t, h.started, waitLong, "the handler to start")
	require.NoError(t, srv.Close())
	o := observe(e, nil, nil)
	o.Extra = failure(recv(t, errc, waitLong, "the call"))
	return o
}

const theServerClosed = "connection is shut down: the server closed the connection (frame too large: false, shut down: true)"

// requestOverServerLimit: a request within the Client's frame limit and
// over the Server's makes the Server drop the connection.
func requestOverServerLimit(t *testing.T, e *env) outcome {
	srv, c := limitedPair(t, e, 64<<10, 0)
	var ran atomic.Bool
	require.NoError(t, dispatch.Handle(srv, "Big.Len", func(ctx context.Context, b *[]byte, n *int) error {
		ran.Store(true)
		*n = len(*b)
		return nil
	}))
	n := 0
	err := c.Call(context.Background(), "Big.Len", new(make([]byte, 100<<10)), &n)
	o := observe(e, nil, nil)
	o.Extra = fmt.Sprint(failure(err), ", handler ran: ", ran.Load())
	return o
}

// replyOverClientLimit: a reply within the Server's frame limit and over
// the Client's makes the Client drop the connection.
func replyOverClientLimit(t *testing.T, e *env) outcome {
	srv, c := limitedPair(t, e, 0, 64<<10)
	require.NoError(t, dispatch.Handle(srv, "Big.Make", func(ctx context.Context, n *int, reply *[]byte) error {
		*reply = make([]byte, *n)
		return nil
	}))
	var b []byte
	err := c.Call(context.Background(), "Big.Make", intPtr(100<<10), &b)
	o := observe(e, nil, nil)
	o.Extra = fmt.Sprint(failure(err), ", reply of ", len(b))
	return o
}

// replyMetadataRefused: reply metadata the network refuses — too many
// entries, or too many bytes — makes the reply, or the handler's error
// reply, an error with CodeInternal and without the metadata, on every
// path, whether the method borrows or not; a reply within the limits
// carries its metadata on.
func replyMetadataRefused(md dispatch.Metadata) func(t *testing.T, e *env) outcome {
	return func(t *testing.T, e *env) outcome {
		srv, c := limitedPair(t, e, 0, 0)
		set := func(ctx context.Context, args *int, reply *int) error {
			*reply = *args
			switch *args {
			case 0:
				return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"small": "yes"})
			case 2:
				_ = dispatch.SetReplyMetadata(ctx, md)
				return errors.New("failed, with metadata")
			}
			return dispatch.SetReplyMetadata(ctx, md)
		}
		require.NoError(t, dispatch.Handle(srv, "Meta.Borrows", set, dispatch.Borrows()))
		require.NoError(t, dispatch.Handle(srv, "Meta.Keeps", set))
		var words []string
		for _, method := range []string{"Meta.Borrows", "Meta.Keeps"} {
			for _, base := range []context.Context{context.Background(), t.Context()} {
				for _, n := range []int{1, 0, 2} {
					got := dispatch.Metadata{"stale": "x"}
					reply := intPtr(5)
					err := c.Call(dispatch.CaptureReplyMetadata(base, &got), method, intPtr(n), reply)
					words = append(words, fmt.Sprintf("%v (code %s), reply %d, metadata %d", failure(err), codeOf(err), *reply, len(got)))
				}
			}
		}
		o := observe(e, nil, nil)
		o.Extra = strings.Join(words, "; ")
		return o
	}
}

func wantReplyRefused(tooLarge string) func(t *testing.T, o outcome) {
	return func(t *testing.T, o outcome) {
		parts := strings.Split(o.Extra, "; ")
		require.Len(t, parts, 12)
		for i, p := range parts {
			method := "Meta.Borrows"
			if i >= 6 {
				method = "Meta.Keeps"
			}
			if i%3 == 1 {
				assert.Equal(t, "ok (code <not *dispatch.Error>), reply 0, metadata 1", p)
				continue
			}
			assert.Regexp(t, "^dispatch: reply of "+method+" is too large: transport: frame too large: "+tooLarge+
				` \(frame too large: false, shut down: false\) \(code internal\), reply 0, metadata 0$`, p)
		}
	}
}

// handlerChangesItsMetadata: a handler that changes the map MetadataFrom
// gave it changes nothing a Server interceptor around it sees, nor the
// caller's metadata; the change is the handler's own.
func handlerChangesItsMetadata(t *testing.T, e *env) outcome {
	// A channel, not a slice: over a socket the reply is no
	// synchronisation the race detector sees.
	seen := make(chan string, 2)
	ic := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		seen <- fmt.Sprint("interceptor before: ", dispatch.MetadataFrom(ctx))
		err := next(ctx, args, reply)
		seen <- fmt.Sprint("interceptor after: ", dispatch.MetadataFrom(ctx))
		return err
	}
	srv, c := limitedPair(t, e, 0, 0, dispatch.WithInterceptors(ic))
	require.NoError(t, dispatch.Handle(srv, "Meta.Change", func(ctx context.Context, _ *struct{}, reply *string) error {
		md := dispatch.MetadataFrom(ctx)
		md["k"] = "handler's"
		md["new"] = "handler's"
		*reply = fmt.Sprint(md)
		return nil
	}, dispatch.Borrows()))
	sent := dispatch.Metadata{"k": "caller's"}
	var reply string
	err := c.Call(dispatch.WithMetadata(context.Background(), sent), "Meta.Change", nil, &reply)
	o := observe(e, &reply, err)
	o.Extra = strings.Join([]string{recv(t, seen, waitLong, "the interceptor"), recv(t, seen, waitLong, "the interceptor"),
		fmt.Sprint("caller's: ", sent)}, "; ")
	return o
}

// streamMetadataRefused: a stream whose opening frame, its metadata, is
// over what a frame may carry fails to open, on every path, in both of
// CallStream's ways (a context that cannot end, and one that can) and
// OpenStream's, with the error the network's Client gives.
func streamMetadataRefused(md dispatch.Metadata) func(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
	return func(t *testing.T, c *dispatch.Client, pr *streamProbe) streamOutcome {
		var words []string
		for _, base := range []context.Context{context.Background(), t.Context()} {
			ctx := dispatch.WithMetadata(base, md)
			got, err := collect(dispatch.CallStream[Num, Num](ctx, c, "S.Count", &Num{3}))
			words = append(words, fmt.Sprint("CallStream: ", summary(got), ", ", failure(err)))
			s, err := dispatch.OpenStream[Num, Num](ctx, c, "S.Echo")
			if s != nil {
				s.Close()
			}
			words = append(words, fmt.Sprint("OpenStream: ", failure(err)))
		}
		return streamOutcome{Extra: strings.Join(words, "; ")}
	}
}

// wantStreamRefused wants every way refused over tooLarge; OpenStream's
// opening frame, which asks for the ready frame (Established), over
// openTooLarge.
func wantStreamRefused(tooLarge, openTooLarge string) func(t *testing.T, o streamOutcome) {
	return func(t *testing.T, o streamOutcome) {
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

// Rows of parityCases added here, next to their helpers: TestParity runs
// them on every path with the rest.
func init() {
	parityCases = append(parityCases,
		parityCase{"error reply over the frame limit", errorReplyTooLarge(0), wantErrorReplyTooLarge(
			"dispatch: reply of Err.METHOD is too large: transport: frame too large: \\d+ bytes, limit 4194304 \\(frame too large: false, shut down: false\\) \\(code internal\\)"), netrpcErrorTooLarge},
		parityCase{"error reply over the client's frame limit", errorReplyTooLarge(64 << 10), wantErrorReplyTooLarge(
			"Err.METHOD over <path>: connection is shut down: transport: frame too large: peer announced \\d+ bytes, limit 65536 \\(frame too large: true, shut down: true\\) \\(code <not \\*dispatch.Error>\\)"), netrpcErrorOverClientLimit},
	)
}

// errorReplyTooLarge: a handler's error whose message alone makes its
// reply too large for a frame. Over the Server's limit (clientLimit 0: both
// ends have the default) it is answered with CodeInternal, without the
// message, and the connection goes on; over the Client's only, the Client
// drops the connection — on every path, whether the method borrows or not,
// in both of a call's ways (a context that cannot end, and one that can).
// Before, the network's Server closed the connection for the first, and the
// shortcut measured neither.
func errorReplyTooLarge(clientLimit int) func(t *testing.T, e *env) outcome {
	return func(t *testing.T, e *env) outcome {
		srv, c := limitedPair(t, e, 0, clientLimit)
		size := 5 << 20
		if clientLimit > 0 {
			size = clientLimit + 100
		}
		fail := func(ctx context.Context, args *int, reply *int) error {
			if *args == 0 {
				return nil
			}
			return errors.New(strings.Repeat("e", size))
		}
		require.NoError(t, dispatch.Handle(srv, "Err.Borrows", fail, dispatch.Borrows()))
		require.NoError(t, dispatch.Handle(srv, "Err.Keeps", fail))
		var words []string
		for _, method := range []string{"Err.Borrows", "Err.Keeps"} {
			for _, base := range []context.Context{context.Background(), t.Context()} {
				err := c.Call(base, method, intPtr(1), new(int))
				words = append(words, fmt.Sprintf("%v (code %s)", failure(err), codeOf(err)))
			}
		}
		// The connection goes on, or, if the Client dropped it, the Client
		// dials a new one.
		words = append(words, "then: "+failure(c.Call(context.Background(), "Err.Keeps", intPtr(0), new(int))))
		o := observe(e, nil, nil)
		o.Extra = strings.Join(words, "; ")
		return o
	}
}

func wantErrorReplyTooLarge(pattern string) func(t *testing.T, o outcome) {
	return func(t *testing.T, o outcome) {
		parts := strings.Split(o.Extra, "; ")
		require.Len(t, parts, 5)
		for i, p := range parts[:4] {
			method := "Borrows"
			if i >= 2 {
				method = "Keeps"
			}
			assert.Regexp(t, "^"+strings.ReplaceAll(pattern, "METHOD", method)+"$", p)
		}
		// The connection goes on, or the Client dialled a new one.
		assert.Equal(t, "then: ok", parts[4])
	}
}
