package dispatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// Parity cases beyond the conformance suite (dispatchtest). Each test states a rule of the package
// doc or of the README's "The same on every path", how the code broke it, and
// runs it on the paths it concerns, demanding the same outcome on each.

// acrossPaths runs f on every path (but skip) and asserts that the results
// are the same on all of them.
func acrossPaths[T any](t *testing.T, skip func(p path) bool, f func(t *testing.T, p path, e *env) T) {
	t.Helper()
	acrossThese(t, paths, skip, f)
}

// acrossPathsAndNetRPC is acrossPaths with the netrpc path too
// (parity_netrpc_test.go), for a rule a Client over a net/rpc codec keeps
// as well. A rule it does not keep is listed there, with why.
func acrossPathsAndNetRPC[T any](t *testing.T, skip func(p path) bool, f func(t *testing.T, p path, e *env) T) {
	t.Helper()
	acrossThese(t, pathsAndNetRPC(), skip, f)
}

func acrossThese[T any](t *testing.T, these []path, skip func(p path) bool, f func(t *testing.T, p path, e *env) T) {
	t.Helper()
	results := map[string]T{}
	var order []string
	for _, p := range these {
		if skip != nil && skip(p) {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			results[p.name] = f(t, p, p.setup(t))
			order = append(order, p.name)
		})
	}
	for _, name := range order[1:] {
		assert.Equal(t, results[order[0]], results[name], "%s differs from %s", name, order[0])
	}
}

func skipDirect(p path) bool { return p.name == "shortcut-direct" }

type callResult struct {
	Reply string
	Err   string
	Code  dispatch.Code
}

func result(reply any, err error) callResult {
	r := callResult{Reply: jsonOf(reply)}
	if err != nil {
		r.Err = pathless(err.Error())
		r.Code = codeOf(err)
	}
	return r
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Rule: "Call zeroes *reply before the call, and on error *reply is left
// zero." Bug: on the network paths, Call returns the context's error before
// zeroing *reply when ctx has already ended (client.go, Call: the ctx.Err
// check comes before zero(reply)); the shortcut zeroes it.
func TestReplyZeroWhenContextAlreadyEnded(t *testing.T) {
	acrossPathsAndNetRPC(t, nil, func(t *testing.T, _ path, e *env) callResult {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		n := intPtr(5)
		err := e.client.Call(ctx, "Arith.Multiply", Args{2, 3}, n)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, *n, "bug: *reply was not zeroed")
		return result(n, err)
	})
}

// Rule: nil args, or a typed-nil pointer, are the zero arguments on every
// path (TestTypedNilArgs). Bug: for a method taking raw bytes ([]byte
// args), the network and copy paths encode nil as msgpack nil (0xc0), which
// the raw decoder then hands to the handler as the one-byte body [0xc0], and
// a nil *[]byte fails to encode at all; the direct path gives the handler an
// empty slice for both.
func TestNilArgsToRawBytesMethod(t *testing.T) {
	for name, args := range map[string]any{"nil": nil, "nil *[]byte": (*[]byte)(nil)} {
		t.Run(name, func(t *testing.T) {
			acrossPaths(t, nil, func(t *testing.T, _ path, e *env) callResult {
				reply := &[]byte{1}
				err := e.client.Call(context.Background(), "Arith.Echo", args, reply)
				assert.NoError(t, err)
				assert.Empty(t, *reply, "the handler should have had empty args")
				return result(reply, err)
			})
		})
	}
}

// Rule: what the caller observes is the same on every path. Bug: on the
// network the client encodes the arguments before the server can look the
// method up, so unencodable args to an unknown method fail with the
// encoding error; the copy shortcut looks the method up first
// (shortcut.go, Client.shortcut) and answers CodeNotFound.
func TestUnencodableArgsToUnknownMethod(t *testing.T) {
	acrossPaths(t, skipDirect, func(t *testing.T, _ path, e *env) callResult {
		err := e.client.Call(context.Background(), "Arith.Nope", make(chan int), new(int))
		require.Error(t, err)
		return result(nil, err)
	})
}

// Rule: "MetadataFrom ... is nil when the caller sent none." Bug: a caller
// that sends an empty set (WithMetadata(ctx, Metadata{})) sends none over
// the network — no Md- header — so the handler sees nil; the shortcut
// clones the empty map, so the handler sees an empty, non-nil one.
func TestEmptyMetadataArrivesAsNil(t *testing.T) {
	acrossPaths(t, nil, func(t *testing.T, _ path, e *env) bool {
		require.NoError(t, dispatch.Handle(e.server, "Md.IsNil", func(ctx context.Context, _ *struct{}, reply *bool) error {
			*reply = dispatch.MetadataFrom(ctx) == nil
			return nil
		}))
		var isNil bool
		ctx := dispatch.WithMetadata(context.Background(), dispatch.Metadata{})
		require.NoError(t, e.client.Call(ctx, "Md.IsNil", nil, &isNil))
		assert.True(t, isNil, "bug: the handler saw a non-nil empty Metadata")
		return isNil
	})
}

// jsonCodec is a codec the test servers do not accept.
type jsonCodec struct{}

func (jsonCodec) Name() string                       { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Rule: the server decides which codecs it accepts, on every path. Bug: the
// direct shortcut never asks (shortcut.go, Client.shortcut takes the direct
// branch before codecFor), so a Client whose codec the Server refuses over
// the network and on the copy shortcut is served on the direct one.
func TestUnacceptedCodecRefusedOnEveryPath(t *testing.T) {
	acrossPaths(t, nil, func(t *testing.T, p path, e *env) callResult {
		opts := []dispatch.ClientOption{dispatch.WithCodec(jsonCodec{})}
		switch p.name {
		case "shortcut-copy":
			opts = append(opts, dispatch.WithShortcut(dispatch.ShortcutCopy))
		case "shortcut-direct":
			opts = append(opts, dispatch.WithShortcut(dispatch.ShortcutDirect))
		}
		c, err := dispatch.Dial(context.Background(), e.tr, e.addr, opts...)
		require.NoError(t, err)
		defer c.Close()
		n := new(int)
		err = c.Call(context.Background(), "Arith.Multiply", Args{2, 3}, n)
		assert.Equal(t, &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: `dispatch: unsupported content type "json"`}, err)
		return result(n, err)
	})
}

// Rule: a frame limit applies to the request as the network counts it —
// header block included. Bug: the copy shortcut counts the body, the method
// name and a 64-byte allowance (shortcut.go, Client.checkSize), not the
// metadata, so a call whose metadata alone exceeds the limit, refused on the
// network before it is sent, runs the handler on the copy shortcut.
func TestMetadataCountsTowardsFrameLimit(t *testing.T) {
	acrossPaths(t, skipDirect, func(t *testing.T, _ path, e *env) bool {
		ctx := dispatch.WithMetadata(context.Background(), dispatch.Metadata{"big": strings.Repeat("m", e.limit)})
		err := e.client.Call(ctx, "Arith.Multiply", Args{2, 3}, new(int))
		assert.ErrorIs(t, err, transport.ErrFrameTooLarge)
		reached := len(e.rec.take()) > 0
		assert.False(t, reached, "bug: the handler ran for a request the network refuses")
		return reached
	})
}

// Rule: "The caller receives the same Code and Message on every path."
// Bug: a reply too large for the frame limit is an *Error whose Message the
// network words from the transport's error ("... frame too large: N bytes,
// limit L", N the exact frame size) and the copy shortcut from its own
// estimate ("... frame too large: about M bytes, limit L").
func TestReplyTooLargeSameMessage(t *testing.T) {
	acrossPaths(t, skipDirect, func(t *testing.T, _ path, e *env) callResult {
		require.NoError(t, dispatch.Handle(e.server, "Big.Make", func(ctx context.Context, n *int, reply *[]byte) error {
			*reply = make([]byte, *n)
			return nil
		}))
		var b []byte
		err := e.client.Call(context.Background(), "Big.Make", intPtr(e.limit+100), &b)
		assert.Equal(t, dispatch.CodeInternal, codeOf(err))
		assert.Empty(t, b)
		return result(nil, err)
	})
}

// Rule: registering a method never removes another. Bug: Server.add marks
// the service part of every name as known by storing nil under it, in the
// same map as the methods, so registering "Svc.Get.More" (service
// "Svc.Get") overwrites the method "Svc.Get" with that marker; in the other
// order, registering "Svc.Get" fails as "already registered".
func TestRegisteringNestedNameKeepsMethod(t *testing.T) {
	get := func(ctx context.Context, _ *struct{}, reply *string) error { *reply = "get"; return nil }
	more := func(ctx context.Context, _ *struct{}, reply *string) error { *reply = "more"; return nil }
	for _, order := range []string{"Get first", "Get.More first"} {
		t.Run(order, func(t *testing.T) {
			srv := dispatch.NewServer()
			t.Cleanup(func() { srv.Close() })
			if order == "Get first" {
				require.NoError(t, dispatch.Handle(srv, "Svc.Get", get))
				require.NoError(t, dispatch.Handle(srv, "Svc.Get.More", more))
			} else {
				require.NoError(t, dispatch.Handle(srv, "Svc.Get.More", more))
				require.NoError(t, dispatch.Handle(srv, "Svc.Get", get), "bug: a free name was refused")
			}
			m := memory.New()
			addr := serve(t, srv, m, "")
			c, err := dispatch.Dial(context.Background(), m, addr)
			require.NoError(t, err)
			defer c.Close()
			for method, want := range map[string]string{"Svc.Get": "get", "Svc.Get.More": "more"} {
				var s string
				err := c.Call(context.Background(), method, nil, &s)
				assert.NoError(t, err, "bug: %s is gone", method)
				assert.Equal(t, want, s)
			}
		})
	}
}

// Rule: a handler returning no error succeeds. Bug: a handler that returns
// a nil *dispatch.Error (a typed nil in the error interface, the usual
// result of `var e *dispatch.Error; ...; return e`) makes toError
// dereference it (errors.As finds the nil *Error): the nil-pointer panic
// inside dispatch is reported as "dispatch: panic in <method>" with
// CodeInternal and logged as a handler panic.
func TestHandlerReturningNilErrorPointer(t *testing.T) {
	acrossPathsAndNetRPC(t, nil, func(t *testing.T, _ path, e *env) callResult {
		require.NoError(t, dispatch.Handle(e.server, "Nil.Err", func(ctx context.Context, args *int, reply *int) error {
			*reply = *args
			var err *dispatch.Error
			return err
		}))
		n := new(int)
		err := e.client.Call(context.Background(), "Nil.Err", intPtr(4), n)
		assert.NoError(t, err)
		assert.Equal(t, 4, *n)
		return result(n, err)
	})
}

// Rule: Server.Close "calls in flight get no reply (their callers see the
// connection fail)", and their handlers' contexts end; Shutdown whose ctx
// ends first does the same. Bug: a call in flight on the shortcut is
// untouched by either: its handler's context is the caller's, which the
// Server cannot cancel, and the call then returns the handler's reply as a
// success.
func TestServerStopEndsShortcutCalls(t *testing.T) {
	for _, stop := range []string{"Close", "Shutdown timeout"} {
		t.Run(stop, func(t *testing.T) {
			acrossPathsAndNetRPC(t, nil, func(t *testing.T, _ path, e *env) string {
				h := newHolder(t, e.server)
				reply := new(int)
				errc := callAsync(e.client, context.Background(), "Hold.Wait", intPtr(7), reply)
				recv(t, h.started, waitLong, "the handler to start")
				if stop == "Close" {
					require.NoError(t, e.server.Close())
				} else {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
					defer cancel()
					require.ErrorIs(t, e.server.Shutdown(ctx), context.DeadlineExceeded)
				}
				var ended string
				select {
				case err := <-h.ended:
					ended = "handler context ended: " + err.Error()
				case <-time.After(waitLong):
					ended = "handler context still live"
					t.Error("bug: the handler's context was not cancelled")
				}
				h.free()
				err := recv(t, errc, waitLong, "the call in flight")
				assert.True(t, isConnFailure(err), "bug: want a connection failure, got %v (reply %d)", err, *reply)
				return ended + "; caller failed: " + boolText(isConnFailure(err))
			})
		})
	}
}

// Rule: the handler's context ends when its caller can no longer receive
// the reply. On the network, Client.Close closes the socket and the server
// cancels the calls in flight on it. Bug: on the shortcut, Client.Close
// leaves the handler running with a live context (the call then returns
// ErrShutdown, as documented, but only when the handler finishes on its
// own).
func TestClientCloseEndsHandlerContext(t *testing.T) {
	acrossPathsAndNetRPC(t, nil, func(t *testing.T, _ path, e *env) string {
		h := newHolder(t, e.server)
		errc := callAsync(e.client, context.Background(), "Hold.Wait", intPtr(1), new(int))
		recv(t, h.started, waitLong, "the handler to start")
		require.NoError(t, e.client.Close())
		var ended string
		select {
		case err := <-h.ended:
			ended = "handler context ended: " + err.Error()
		case <-time.After(waitLong):
			ended = "handler context still live"
			t.Error("bug: the handler's context outlived its caller's Client")
		}
		h.free()
		assertClosed(t, "Hold.Wait", recv(t, errc, waitLong, "the call in flight"))
		return ended
	})
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Rule: the handler's context is the same on every path. On the network it
// ends when the call returns (serverCall.run cancels it), so whatever a
// handler tied to it — context.AfterFunc, a goroutine waiting on Done, a
// derived context — is released with the call. Bug: on the shortcut the
// handler's context is the caller's (wrapped for its values only), which
// lives on after the call: what the handler tied to it is never released
// while the caller's context lives (here, context.Background: never).
func TestHandlerContextEndsWhenCallReturns(t *testing.T) {
	acrossPathsAndNetRPC(t, nil, func(t *testing.T, _ path, e *env) string {
		released := make(chan struct{})
		stops := make(chan func() bool, 1)
		// Arguments gob can encode (not nil, not an empty struct), for the
		// netrpc path.
		require.NoError(t, dispatch.Handle(e.server, "Ctx.Tie", func(ctx context.Context, _ *int, reply *int) error {
			stops <- context.AfterFunc(ctx, func() { close(released) })
			return nil
		}))
		require.NoError(t, e.client.Call(context.Background(), "Ctx.Tie", intPtr(1), new(int)))
		stop := recv(t, stops, waitLong, "the handler")
		select {
		case <-released:
			return "released"
		case <-time.After(waitLong):
			stop() // release the AfterFunc, so nothing leaks from the test
			t.Error("bug: what the handler tied to its context outlived the call")
			return "still tied"
		}
	})
}

// Rule: the copy shortcut "decodes exactly as the network would", frame
// limits included. Bug: it checks sizes against the Client's transport's
// limit only (Client.limit in shortcut.go); the Server's listener may have a
// smaller one. Over the network such a request is refused by the server's
// transport (it closes the connection: a connection failure); on the copy
// shortcut the handler runs and the call succeeds.
func TestServerFrameLimitAppliesOnShortcut(t *testing.T) {
	small := tcp.New(tcp.WithMaxFrameSize(4 << 10))
	srv, _, rec := newServer(t)
	addr := serve(t, srv, small, "127.0.0.1:0")
	blob := &Blob{Data: make([]byte, 16<<10)}
	outcome := map[string]string{}
	for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy} {
		c, err := dispatch.Dial(context.Background(), tcp.New(), addr, dispatch.WithShortcut(mode))
		require.NoError(t, err)
		defer c.Close()
		err = c.Call(context.Background(), "Arith.EchoBlob", blob, new(Blob))
		ran := len(rec.take()) > 0
		switch {
		case err == nil:
			outcome[mode.String()] = "succeeded"
		case isConnFailure(err):
			outcome[mode.String()] = "connection failure"
		default:
			outcome[mode.String()] = "*dispatch.Error " + string(codeOf(err))
		}
		if ran {
			outcome[mode.String()] += ", handler ran"
		}
	}
	assert.Equal(t, "connection failure", outcome["off"], "over the network")
	assert.Equal(t, outcome["off"], outcome["copy"], "bug: the copy shortcut ignores the server's frame limit")
}

// One failure reads the same every time: a peer that closes the connection
// (at once, or after reading a request) fails the call with an error
// matching ErrShutdown that says the server closed the connection, in the
// same words whether the read loop or the Send notices first.
func TestPeerCloseIsOneError(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.make(t)
			l, err := tr.Listen(tc.listen)
			require.NoError(t, err)
			var n atomic.Int32
			transporttest.Serve(t, l, func(s transport.Socket) {
				if n.Add(1)%2 == 0 {
					var m transport.Message
					_ = s.Recv(&m)
				}
				s.Close()
			})
			c, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			texts := map[string]int{}
			for range 30 {
				err := c.Call(context.Background(), "Arith.Multiply", Args{1, 2}, new(int))
				require.ErrorIs(t, err, dispatch.ErrShutdown)
				texts[pathless(err.Error())]++
			}
			assert.Equal(t, map[string]int{"Arith.Multiply over <path>: connection is shut down: the server closed the connection": 30}, texts)
		})
	}
}
