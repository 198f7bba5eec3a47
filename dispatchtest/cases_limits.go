package dispatchtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// The cases of limits, of connection failures and of metadata the network
// refuses, which need a Server of their own: one with other frame limits,
// or one they close.

// manyEntries is metadata of n entries, more than a frame's header block
// may hold (WIRE.md §1) when n is over 1,024.
func manyEntries(n int) dispatch.Metadata {
	md := make(dispatch.Metadata, n)
	for i := range n {
		md[fmt.Sprint("k", i)] = "v"
	}
	return md
}

// bigMetadata is metadata of 5 MiB, over the default frame limit.
func bigMetadata() dispatch.Metadata { return dispatch.Metadata{"big": strings.Repeat("m", 5<<20)} }

// recv returns the next value from ch, failing the case if none arrives
// within waitLong, a hang guard.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLong):
		t.Fatalf("timed out after %v waiting for %s", waitLong, what)
	}
	var zero T
	return zero
}

// holder is a method ("Hold.Wait") that holds its call until released or
// until its context ends.
type holder struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHolder(t *testing.T, srv *dispatch.Server) *holder {
	h := &holder{started: make(chan struct{}, 64), release: make(chan struct{})}
	require.NoError(t, dispatch.Handle(srv, "Hold.Wait", func(ctx context.Context, args *int, reply *int) error {
		h.started <- struct{}{}
		select {
		case <-h.release:
			*reply = *args
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	// Registered after the Server: runs before its cleanup, so that a
	// held handler never outlives the case.
	t.Cleanup(h.free)
	return h
}

func (h *holder) free() { h.once.Do(func() { close(h.release) }) }

// callAsync makes a call in a goroutine and delivers its error.
func callAsync(e *env, ctx context.Context, method string, args, reply any) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- e.call(ctx, method, args, reply) }()
	return errc
}

// Request metadata the network refuses — too many entries for a frame, or
// too many bytes — is refused on every path, with the same error, whether
// the method borrows (Arith.Multiply) or not (Keeper.Len), and the handler
// never runs.
func requestMetadataRefused(md dispatch.Metadata) func(t *testing.T, e *env) Outcome {
	return func(t *testing.T, e *env) Outcome {
		var words []string
		for _, c := range []struct {
			method string
			args   any
		}{{"Arith.Multiply", Args{2, 3}}, {"Keeper.Len", Blob{Data: []byte("x")}}} {
			reply := intPtr(3)
			err := e.caller.Call(context.Background(), Call{Method: c.method, Args: c.args, Reply: reply, Metadata: md})
			words = append(words, fmt.Sprint(failure(err), ", reply ", *reply))
		}
		o := observe(e, nil, nil)
		// What the interceptors logged holds the metadata: too long to
		// compare.
		if len(o.Interceptor) > 0 {
			o.Interceptor = []string{"the handler ran"}
		}
		o.Extra = strings.Join(words, "; ")
		return o
	}
}

func wantRequestRefused(tooLarge string) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
		assert.Empty(t, o.Interceptor, "the handler never runs")
		parts := strings.Split(o.Extra, "; ")
		require.Len(t, parts, 2)
		for i, method := range []string{"Arith.Multiply", "Keeper.Len"} {
			assert.Regexp(t, "^dispatch: arguments of "+method+": transport: frame too large: "+tooLarge+
				` \(frame too large: true, shut down: false\), reply 0$`, parts[i])
		}
	}
}

const theServerClosed = "connection is shut down: the server closed the connection (frame too large: false, shut down: true)"

// replyMetadataRefused: reply metadata the network refuses — too many
// entries, or too many bytes — makes the reply, or the handler's error
// reply, an error with CodeInternal and without the metadata, on every
// path, whether the method borrows or not; a reply within the limits
// carries its metadata on.
func replyMetadataRefused(md dispatch.Metadata) func(t *testing.T, e *env) Outcome {
	return func(t *testing.T, e *env) Outcome {
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
		require.NoError(t, dispatch.Handle(e.srv, "Meta.Borrows", set, dispatch.Borrows()))
		require.NoError(t, dispatch.Handle(e.srv, "Meta.Keeps", set))
		var words []string
		for _, method := range []string{"Meta.Borrows", "Meta.Keeps"} {
			for _, base := range []context.Context{context.Background(), t.Context()} {
				for _, n := range []int{1, 0, 2} {
					got := dispatch.Metadata{"stale": "x"}
					reply := intPtr(5)
					err := e.caller.Call(base, Call{Method: method, Args: intPtr(n), Reply: reply, ReplyMetadata: &got})
					words = append(words, fmt.Sprintf("%v (code %s), reply %d, metadata %d", failure(err), codeOf(err), *reply, len(got)))
				}
			}
		}
		o := observe(e, nil, nil)
		o.Extra = strings.Join(words, "; ")
		return o
	}
}

func wantReplyRefused(tooLarge string) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
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

// errorReplyTooLarge: a handler's error whose message alone makes its
// reply too large for a frame. Over the Server's limit (clientLimit 0:
// both ends have the default) it is answered with CodeInternal, without
// the message, and the connection goes on; over the Client's only, the
// Client drops the connection — on every path, whether the method borrows
// or not, in both of a call's ways (a context that cannot end, and one
// that can).
func errorReplyTooLarge(clientLimit int) func(t *testing.T, e *env) Outcome {
	return func(t *testing.T, e *env) Outcome {
		pair := e.again(Limits{Client: clientLimit})
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
		require.NoError(t, dispatch.Handle(pair.srv, "Err.Borrows", fail, dispatch.Borrows()))
		require.NoError(t, dispatch.Handle(pair.srv, "Err.Keeps", fail))
		var words []string
		for _, method := range []string{"Err.Borrows", "Err.Keeps"} {
			for _, base := range []context.Context{context.Background(), t.Context()} {
				err := pair.call(base, method, intPtr(1), new(int))
				words = append(words, fmt.Sprintf("%v (code %s)", failure(err), codeOf(err)))
			}
		}
		// The connection goes on, or, if the Client dropped it, the Client
		// dials a new one.
		words = append(words, "then: "+failure(pair.call(context.Background(), "Err.Keeps", intPtr(0), new(int))))
		o := observe(pair, nil, nil)
		o.Extra = strings.Join(words, "; ")
		return o
	}
}

func wantErrorReplyTooLarge(pattern string) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
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

var limitCases = []testCase{
	{name: "request metadata of 1,100 entries", run: requestMetadataRefused(manyEntries(1100)), check: wantRequestRefused("1102 header entries, limit 1024")},
	{name: "request metadata over the frame limit", run: requestMetadataRefused(bigMetadata()), check: wantRequestRefused(`\d+ bytes, limit 4194304`)},
	{name: "the server closed mid-call", run: func(t *testing.T, e *env) Outcome {
		// A Server closed while its handler runs fails the call as the
		// connection's end does.
		h := newHolder(t, e.srv)
		errc := callAsync(e, context.Background(), "Hold.Wait", intPtr(1), new(int))
		recv(t, h.started, "the handler to start")
		require.NoError(t, e.srv.Close())
		err := recv(t, errc, "the call")
		o := observe(e, nil, nil)
		// The handler's context ends with the Server: it returns,
		// before or after the caller's failure.
		o.Interceptor = e.svc.rec.waitFor(o.Interceptor, "<outer")
		o.Extra = failure(err)
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Equal(t, "Hold.Wait over <path>: "+theServerClosed, o.Extra)
	}},
	{name: "request over the server's frame limit", run: func(t *testing.T, e *env) Outcome {
		// A request within the Client's frame limit and over the
		// Server's makes the Server drop the connection.
		pair := e.again(Limits{Server: 64 << 10})
		var ran atomic.Bool
		require.NoError(t, dispatch.Handle(pair.srv, "Big.Len", func(ctx context.Context, b *[]byte, n *int) error {
			ran.Store(true)
			*n = len(*b)
			return nil
		}))
		n := 0
		err := pair.call(context.Background(), "Big.Len", new(make([]byte, 100<<10)), &n)
		o := observe(pair, nil, nil)
		o.Extra = fmt.Sprint(failure(err), ", handler ran: ", ran.Load())
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Equal(t, "Big.Len over <path>: "+theServerClosed+", handler ran: false", o.Extra)
	}},
	{name: "reply over the client's frame limit", run: func(t *testing.T, e *env) Outcome {
		// A reply within the Server's frame limit and over the
		// Client's makes the Client drop the connection.
		pair := e.again(Limits{Client: 64 << 10})
		require.NoError(t, dispatch.Handle(pair.srv, "Big.Make", func(ctx context.Context, n *int, reply *[]byte) error {
			*reply = make([]byte, *n)
			return nil
		}))
		var b []byte
		err := pair.call(context.Background(), "Big.Make", intPtr(100<<10), &b)
		o := observe(pair, nil, nil)
		o.Extra = fmt.Sprint(failure(err), ", reply of ", len(b))
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Equal(t, "Big.Make over <path>: connection is shut down: transport: frame too large: peer announced 102430 bytes, limit 65536 (frame too large: true, shut down: true), reply of 0", o.Extra)
	}},
	{name: "reply metadata of 1,100 entries", run: replyMetadataRefused(manyEntries(1100)), check: wantReplyRefused(`110[23] header entries, limit 1024`)},
	{name: "reply metadata over the frame limit", run: replyMetadataRefused(bigMetadata()), check: wantReplyRefused(`\d+ bytes, limit 4194304`)},
	{name: "a handler's changes to its metadata are its own", run: func(t *testing.T, e *env) Outcome {
		// A handler that changes the map MetadataFrom gave it changes
		// nothing a Server interceptor around it sees, nor the
		// caller's metadata. A channel, not a slice: over a socket
		// the reply is no synchronisation the race detector sees.
		seen := make(chan string, 2)
		ic := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
			seen <- fmt.Sprint("interceptor before: ", dispatch.MetadataFrom(ctx))
			err := next(ctx, args, reply)
			seen <- fmt.Sprint("interceptor after: ", dispatch.MetadataFrom(ctx))
			return err
		}
		pair := e.again(Limits{}, dispatch.WithInterceptors(ic))
		require.NoError(t, dispatch.Handle(pair.srv, "Meta.Change", func(ctx context.Context, _ *struct{}, reply *string) error {
			md := dispatch.MetadataFrom(ctx)
			md["k"] = "handler's"
			md["new"] = "handler's"
			*reply = fmt.Sprint(md)
			return nil
		}, dispatch.Borrows()))
		sent := dispatch.Metadata{"k": "caller's"}
		var reply string
		err := pair.caller.Call(context.Background(), Call{Method: "Meta.Change", Reply: &reply, Metadata: sent})
		pair.svc.rec.take() // the suite's own interceptors: not this case's
		o := observe(pair, &reply, err)
		o.Extra = strings.Join([]string{recv(t, seen, "the interceptor"), recv(t, seen, "the interceptor"),
			fmt.Sprint("caller's: ", sent)}, "; ")
		return o
	}, check: func(t *testing.T, o Outcome) {
		assert.Empty(t, o.Err)
		assert.Equal(t, "map[k:handler's new:handler's]", o.Reply)
		assert.Equal(t, "interceptor before: map[k:caller's]; interceptor after: map[k:caller's]; caller's: map[k:caller's]", o.Extra)
	}},
	{name: "error reply over the frame limit", run: errorReplyTooLarge(0), check: wantErrorReplyTooLarge(
		"dispatch: reply of Err.METHOD is too large: transport: frame too large: \\d+ bytes, limit 4194304 \\(frame too large: false, shut down: false\\) \\(code internal\\)")},
	{name: "error reply over the client's frame limit", run: errorReplyTooLarge(64 << 10), check: wantErrorReplyTooLarge(
		"Err.METHOD over <path>: connection is shut down: transport: frame too large: peer announced \\d+ bytes, limit 65536 \\(frame too large: true, shut down: true\\) \\(code <not \\*dispatch.Error>\\)")},
}
