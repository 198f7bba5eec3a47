package dispatch_test

import (
	"context"
	"errors"
	"fmt"
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

// dialLimited is dialPath with a frame limit of limit bytes on both ends.
func dialLimited(t testing.TB, p dispatch.Path, srv *dispatch.Server, limit int, opts ...dispatch.ClientOption) *dispatch.Client {
	var tr transport.Transport
	listen := "127.0.0.1:0"
	switch p {
	case "memory":
		tr, listen = memory.New(memory.WithMaxFrameSize(limit)), ""
	case "mux":
		m := mux.New(mux.WithMaxFrameSize(limit))
		t.Cleanup(func() { m.Close() })
		tr = m
	case dispatch.PathShortcutCopy:
		tr = tcp.New(tcp.WithMaxFrameSize(limit))
		opts = append(opts, dispatch.WithShortcut(dispatch.ShortcutCopy))
	case dispatch.PathShortcutDirect:
		tr = tcp.New(tcp.WithMaxFrameSize(limit))
		opts = append(opts, dispatch.WithShortcut(dispatch.ShortcutDirect))
	default:
		tr = tcp.New(tcp.WithMaxFrameSize(limit))
	}
	addr := serve(t, srv, tr, listen)
	c, err := dispatch.Dial(context.Background(), tr, addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// streamLimit is the frame limit of the tests below: small, so that the
// messages are too.
const streamLimit = 64 << 10

// largestMsg is the largest raw message a frame of streamLimit carries: a
// message frame's header is its Seq (one digit for the first streams of a
// connection) and its Stream.
var largestMsg = streamLimit - frame.HeaderLen(map[string]string{"Seq": "0", "Stream": "msg"})

// pattern returns n bytes that are not all alike.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// sendOutcome words a Send's error for comparison across paths.
func sendOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%v (frame too large: %v, code %s)", err, errors.Is(err, transport.ErrFrameTooLarge), codeOf(err))
}

// A message over the frame limit, either way, fails its Send with an error
// matching transport.ErrFrameTooLarge, as oversize arguments fail a Call;
// nothing is sent, and the stream and the connection go on: the next
// message, and one just within the limit, go through. The same on every
// path, but for the handler's messages on the direct path, which pass by
// pointer and, as direct replies, are not measured (ShortcutDirect).
func TestStreamMessageOverFrameLimit(t *testing.T) {
	type outcome struct {
		Up   []string // the caller's Sends: within, over, small
		Down []string // the handler's Sends: within, over, small
		Got  []string // what the caller received, in order
		Err  string   // how the stream ended
		Call string   // a unary call on the same Client afterwards
	}
	run := func(t *testing.T, p dispatch.Path) outcome {
		srv := dispatch.NewServer()
		// Make answers each size it receives with a message of that size,
		// and with what its Send said when that failed.
		require.NoError(t, dispatch.HandleStream(srv, "L.Make", func(ctx context.Context, s *dispatch.ServerStream[int, []byte]) error {
			for n, err := range s.Recv() {
				if err != nil {
					return err
				}
				b := pattern(*n)
				if err := s.Send(&b); err != nil {
					msg := []byte("handler's Send: " + sendOutcome(err))
					if err := s.Send(&msg); err != nil {
						return err
					}
				}
			}
			return nil
		}, dispatch.Borrows()))
		// Size answers each message with its size.
		require.NoError(t, dispatch.HandleStream(srv, "L.Size", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
			for m, err := range s.Recv() {
				if err != nil {
					return err
				}
				b := []byte(fmt.Sprint(len(*m), " ", string(*m) == string(pattern(len(*m)))))
				if err := s.Send(&b); err != nil {
					return err
				}
			}
			return nil
		}, dispatch.Borrows()))
		require.NoError(t, dispatch.Handle(srv, "L.Echo", func(ctx context.Context, args *int, reply *int) error {
			*reply = *args
			return nil
		}))
		c := dialLimited(t, p, srv, streamLimit)
		var o outcome
		words := func(m []byte) string {
			if strings.HasPrefix(string(m), "handler's Send") {
				return string(m)
			}
			return fmt.Sprint(len(m), " bytes, as sent: ", string(m) == string(pattern(len(m))))
		}

		up, err := dispatch.OpenStream[[]byte, []byte](context.Background(), c, "L.Size")
		require.NoError(t, err)
		defer up.Close()
		for _, n := range []int{largestMsg, largestMsg + 1, 10} {
			b := pattern(n)
			o.Up = append(o.Up, sendOutcome(up.Send(&b)))
		}
		require.NoError(t, up.CloseSend())
		for m, err := range up.Recv() {
			if err != nil {
				o.Err = err.Error()
				break
			}
			o.Got = append(o.Got, string(*m))
		}

		down, err := dispatch.OpenStream[int, []byte](context.Background(), c, "L.Make")
		require.NoError(t, err)
		defer down.Close()
		for _, n := range []int{largestMsg, largestMsg + 1, 10} {
			require.NoError(t, down.Send(&n))
		}
		require.NoError(t, down.CloseSend())
		for m, err := range down.Recv() {
			if err != nil {
				o.Err += err.Error()
				break
			}
			o.Down = append(o.Down, words(*m))
		}
		var n int
		o.Call = sendOutcome(c.Call(context.Background(), "L.Echo", 5, &n))
		return o
	}
	tooLarge := fmt.Sprintf("dispatch: message of %%s: transport: frame too large: %d bytes, limit %d (frame too large: true, code <not *dispatch.Error>)", streamLimit+1, streamLimit)
	want := outcome{
		Up:   []string{"ok", fmt.Sprintf(tooLarge, "L.Size"), "ok"},
		Got:  []string{fmt.Sprint(largestMsg, " true"), "10 true"},
		Down: []string{fmt.Sprint(largestMsg, " bytes, as sent: true"), "handler's Send: " + fmt.Sprintf(tooLarge, "L.Make"), "10 bytes, as sent: true"},
		Call: "ok",
	}
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			w := want
			if p == dispatch.PathShortcutDirect {
				w.Down = []string{fmt.Sprint(largestMsg, " bytes, as sent: true"), fmt.Sprint(largestMsg+1, " bytes, as sent: true"), "10 bytes, as sent: true"}
			}
			assert.Equal(t, w, run(t, p))
		})
	}
	// The one-message shape, CallStream, fails the same way, on its fast
	// path (a context that cannot end) and the other. On the direct path's
	// fast one, the handler reads the caller's own arguments (HandleStream),
	// which nothing measures.
	for _, p := range pathNames {
		for _, ctx := range []context.Context{context.Background(), t.Context()} {
			t.Run(fmt.Sprintf("%s/CallStream/ctx can end: %v", p, ctx.Done() != nil), func(t *testing.T) {
				srv, _ := streamServer(t)
				c := dialLimited(t, p, srv, streamLimit)
				call := func(n int) string {
					b := pattern(n)
					got, err := collect(dispatch.CallStream[[]byte, []byte](ctx, c, "S.Bytes", &b))
					if err != nil {
						return fmt.Sprint(len(got), " messages, ", sendOutcome(err))
					}
					return fmt.Sprint(len(got), " messages, as sent: ", len(got) == 1 && string(got[0]) == string(b))
				}
				over := fmt.Sprintf("0 messages, "+tooLarge, "S.Bytes")
				if p == dispatch.PathShortcutDirect && ctx.Done() == nil {
					over = "1 messages, as sent: true"
				}
				assert.Equal(t, []string{over, "1 messages, as sent: true"}, []string{call(largestMsg + 1), call(largestMsg)})
			})
		}
	}
}

// A stream whose handler sets reply metadata too large for the end of the
// stream to fit in a frame ends as a unary call with such a reply does:
// with CodeInternal and without the metadata — never silently, never
// hanging — and the connection goes on. The same on every path: the direct
// one measures no values, but it does measure metadata, as the network
// does (the end of a stream has no body; a unary reply's is encoded for
// the error's words once its metadata alone is too large).
func TestStreamEndMetadataOverFrameLimit(t *testing.T) {
	type outcome struct {
		Got     []int
		Err     string
		Code    dispatch.Code
		MD      string
		Unary   string
		UnaryMD string
		Next    string // a stream with small metadata, afterwards
	}
	big := strings.Repeat("m", streamLimit)
	mdWords := func(md dispatch.Metadata) string {
		if v, ok := md["big"]; ok {
			return fmt.Sprint("big of ", len(v))
		}
		return fmt.Sprint(md)
	}
	run := func(t *testing.T, p dispatch.Path, ctx context.Context) outcome {
		srv := dispatch.NewServer()
		// Big sends 1 and sets big reply metadata for the argument 1,
		// small for any other.
		require.NoError(t, dispatch.HandleStream(srv, "M.Big", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
			md := dispatch.Metadata{"small": "yes"}
			for n, err := range s.Recv() {
				if err != nil {
					return err
				}
				if *n == 1 {
					md = dispatch.Metadata{"big": big}
				}
			}
			if err := dispatch.SetReplyMetadata(ctx, md); err != nil {
				return err
			}
			one := 1
			return s.Send(&one)
		}, dispatch.Borrows()))
		require.NoError(t, dispatch.Handle(srv, "M.Unary", func(ctx context.Context, args *int, reply *int) error {
			*reply = 1
			return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"big": big})
		}, dispatch.Borrows()))
		c := dialLimited(t, p, srv, streamLimit)
		var o outcome
		md := dispatch.Metadata{"stale": "x"}
		for m, err := range dispatch.CallStream[int, int](dispatch.CaptureReplyMetadata(ctx, &md), c, "M.Big", intPtr(1)) {
			if err != nil {
				o.Err, o.Code = err.Error(), codeOf(err)
				break
			}
			o.Got = append(o.Got, *m)
		}
		o.MD = mdWords(md)
		md = dispatch.Metadata{"stale": "x"}
		var n int
		err := c.Call(dispatch.CaptureReplyMetadata(ctx, &md), "M.Unary", 1, &n)
		o.Unary = fmt.Sprintf("%v, code %s", err, codeOf(err))
		o.UnaryMD = mdWords(md)
		md = nil
		got, err := collect(dispatch.CallStream[int, int](dispatch.CaptureReplyMetadata(ctx, &md), c, "M.Big", intPtr(0)))
		o.Next = fmt.Sprint(got, err, md)
		return o
	}
	// The end frame: Seq (one digit), Stream, Md-big.
	endSize := frame.HeaderLen(map[string]string{"Seq": "0", "Stream": "end", "Md-big": big})
	want := outcome{
		Got:     []int{1},
		Err:     fmt.Sprintf("dispatch: end of stream of M.Big is too large: transport: frame too large: %d bytes, limit %d", endSize, streamLimit),
		Code:    dispatch.CodeInternal,
		MD:      "map[]",
		Unary:   "dispatch: reply of M.Unary is too large: transport: frame too large: ",
		UnaryMD: "map[]",
		Next:    "[1] <nil> map[small:yes]",
	}
	for _, p := range pathNames {
		// CallStream's fast path (a context that cannot end), and the
		// other.
		for _, ctx := range []context.Context{context.Background(), t.Context()} {
			t.Run(fmt.Sprintf("%s/ctx can end: %v", p, ctx.Done() != nil), func(t *testing.T) {
				w := want
				o := run(t, p, ctx)
				if strings.HasPrefix(o.Unary, w.Unary) { // its size is the unary tests' to check
					o.Unary = w.Unary
				}
				assert.Equal(t, w, o)
			})
		}
	}
}

// A stream whose handler ends it with an error whose message alone makes
// the end too large for a frame ends as a unary call with such an error
// does: with CodeInternal and without the message, and the connection goes
// on — on every path, in CallStream's two ways and OpenStream's. Before,
// the network's Server closed the connection and the shortcut delivered
// the message unmeasured.
func TestStreamEndErrorOverFrameLimit(t *testing.T) {
	want := []string{
		"dispatch: end of stream of E.Fail is too large: transport: frame too large: " +
			fmt.Sprint(frame.HeaderLen(map[string]string{"Seq": "0", "Stream": "end", "Error": strings.Repeat("e", streamLimit)}), " bytes, limit ", streamLimit) +
			", code internal",
		"then: [1] <nil>",
	}
	for _, p := range pathNames {
		for _, shape := range []string{"CallStream", "CallStream, ctx can end", "OpenStream"} {
			t.Run(fmt.Sprintf("%s/%s", p, shape), func(t *testing.T) {
				srv := dispatch.NewServer()
				require.NoError(t, dispatch.HandleStream(srv, "E.Fail", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
					for n, err := range s.Recv() {
						if err != nil {
							return err
						}
						if *n == 1 {
							return errors.New(strings.Repeat("e", streamLimit))
						}
					}
					return s.Send(new(1))
				}))
				c := dialLimited(t, p, srv, streamLimit)
				ctx := context.Background()
				if shape == "CallStream, ctx can end" {
					ctx = t.Context()
				}
				var err error
				if shape == "OpenStream" {
					s, oerr := dispatch.OpenStream[int, int](ctx, c, "E.Fail")
					require.NoError(t, oerr)
					require.NoError(t, s.Send(new(1)))
					_, err = collect(s.Recv())
					s.Close()
				} else {
					_, err = collect(dispatch.CallStream[int, int](ctx, c, "E.Fail", new(1)))
				}
				got, nerr := collect(dispatch.CallStream[int, int](ctx, c, "E.Fail", new(0)))
				assert.Equal(t, want, []string{fmt.Sprintf("%v, code %s", err, codeOf(err)), fmt.Sprint("then: ", got, " ", nerr)})
			})
		}
	}
}
