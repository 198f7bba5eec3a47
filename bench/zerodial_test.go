package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// zerodial's six paths. Every one serves Arith registered by reflection
// (srv.Register, net/rpc's shape, as the net/rpc peers do) except
// zerodial-direct-generic, which registers the same two methods with
// dispatch.Handle and so needs no reflection.
//
//   - zerodial-direct: the shortcut in ShortcutDirect mode: no codec, args
//     handed to the handler, reply written in place.
//   - zerodial-direct-generic: the same, with dispatch.Handle methods.
//   - zerodial-copy: the shortcut in ShortcutCopy mode: msgpack once each way.
//   - zerodial-direct-deadline, zerodial-direct-generic-deadline,
//     zerodial-copy-deadline: the same three, called with a context that has
//     a deadline, as production calls arrive: the call may then return
//     before its handler, so the handler runs on a Server worker while the
//     caller waits, and in direct mode on a deep copy of the args. The
//     context is made once, outside the timed loop (its cost is the
//     caller's, the same for every implementation).
//   - zerodial-memory, zerodial-tcp, zerodial-mux: a Client over a socket of
//     memory.New(), tcp.New() or mux.New() (yamux over loopback TCP), no
//     shortcut.
//
// Arith's methods are registered with dispatch.Borrows: they keep nothing
// they are given, so direct mode may lend them the caller's values.

func init() {
	register("zerodial-direct", func(tb testing.TB, _ size) func() callFunc {
		return zerodialShortcut(tb, dispatch.ShortcutDirect, registerReflect, ends{})
	})
	register("zerodial-direct-generic", func(tb testing.TB, _ size) func() callFunc {
		return zerodialShortcut(tb, dispatch.ShortcutDirect, registerGeneric, ends{})
	})
	register("zerodial-copy", func(tb testing.TB, _ size) func() callFunc {
		return zerodialShortcut(tb, dispatch.ShortcutCopy, registerReflect, ends{})
	})
	register("zerodial-direct-deadline", func(tb testing.TB, _ size) func() callFunc {
		return withDeadline(tb, zerodialShortcut(tb, dispatch.ShortcutDirect, registerReflect, ends{}))
	})
	register("zerodial-direct-generic-deadline", func(tb testing.TB, _ size) func() callFunc {
		return withDeadline(tb, zerodialShortcut(tb, dispatch.ShortcutDirect, registerGeneric, ends{}))
	})
	register("zerodial-copy-deadline", func(tb testing.TB, _ size) func() callFunc {
		return withDeadline(tb, zerodialShortcut(tb, dispatch.ShortcutCopy, registerReflect, ends{}))
	})
	register("zerodial-memory", func(tb testing.TB, _ size) func() callFunc {
		return zerodialNetwork(tb, memory.New(), "", ends{})
	})
	register("zerodial-tcp", func(tb testing.TB, _ size) func() callFunc {
		return zerodialNetwork(tb, tcp.New(), "127.0.0.1:0", ends{})
	})
	register("zerodial-mux", func(tb testing.TB, _ size) func() callFunc {
		return zerodialMux(tb, ends{})
	})
}

var zerodialMethods = [...]string{multiply: "Arith.Multiply", echo: "Arith.Echo"}

// ends holds options for the Server and the Client of a zerodial row: none
// for the plain rows, interceptors for the instrumented ones (otel_test.go).
type ends struct {
	server []dispatch.ServerOption
	client []dispatch.ClientOption
}

// zerodialMux serves Arith on a mux transport, closed by a cleanup, and
// dials it with no shortcut.
func zerodialMux(tb testing.TB, e ends) func() callFunc {
	tr := mux.New()
	tb.Cleanup(func() { tr.Close() })
	return zerodialNetwork(tb, tr, "127.0.0.1:0", e)
}

func registerReflect(srv *dispatch.Server) error {
	return srv.Register(new(Arith), dispatch.Borrows())
}

// withDeadline makes every call of newCaller's callers with a context that
// has a deadline (an hour away), made once, in place of the benchmark's.
func withDeadline(tb testing.TB, newCaller func() callFunc) func() callFunc {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	tb.Cleanup(cancel)
	return func() callFunc {
		call := newCaller()
		return func(_ context.Context, m method, args, reply any) error {
			return call(ctx, m, args, reply)
		}
	}
}

func registerGeneric(srv *dispatch.Server) error {
	arith := new(Arith)
	return errors.Join(
		dispatch.Handle(srv, "Arith.Multiply", func(_ context.Context, args *Args, reply *Product) error {
			return arith.Multiply(args, reply)
		}, dispatch.Borrows()),
		dispatch.Handle(srv, "Arith.Echo", func(_ context.Context, args *Payload, reply *Payload) error {
			return arith.Echo(args, reply)
		}, dispatch.Borrows()),
	)
}

// serveZerodial starts a Server with Arith on tr at addr and returns the
// address it listens on. Start, unlike go Serve, has made the shortcut
// entry when it returns, so a shortcut Client dialled next finds it.
func serveZerodial(tb testing.TB, tr transport.Transport, addr string, reg func(*dispatch.Server) error, opts ...dispatch.ServerOption) string {
	srv := dispatch.NewServer(opts...)
	if err := reg(srv); err != nil {
		tb.Fatal(err)
	}
	l, err := tr.Listen(addr)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		l.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// dialZerodial returns one shared Client (safe for concurrent use) as the
// callers.
func dialZerodial(tb testing.TB, tr transport.Transport, addr string, opts ...dispatch.ClientOption) func() callFunc {
	c, err := dispatch.Dial(context.Background(), tr, addr, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	call := func(ctx context.Context, m method, args, reply any) error {
		return c.Call(ctx, zerodialMethods[m], args, reply)
	}
	return func() callFunc { return call }
}

// zerodialShortcut serves Arith on a memory transport and dials it with the
// shortcut in mode. The Client dials through noDial, which refuses to open a
// socket: should the shortcut not be taken, setup or the call fails rather
// than timing the memory transport under the shortcut's name.
func zerodialShortcut(tb testing.TB, mode dispatch.ShortcutMode, reg func(*dispatch.Server) error, e ends) func() callFunc {
	tr := memory.New()
	addr := serveZerodial(tb, tr, "", reg, e.server...)
	return dialZerodial(tb, noDial{tr}, addr, append([]dispatch.ClientOption{dispatch.WithShortcut(mode)}, e.client...)...)
}

// zerodialNetwork serves Arith on tr at addr and dials it with no shortcut.
func zerodialNetwork(tb testing.TB, tr transport.Transport, addr string, e ends) func() callFunc {
	addr = serveZerodial(tb, tr, addr, registerReflect, e.server...)
	return dialZerodial(tb, tr, addr, e.client...)
}

// noDial is a memory transport whose Dial fails: a shortcut Client given it
// can only reach a Server through the shortcut. It keeps the address space
// of the transport it wraps, which the shortcut looks addresses up in.
type noDial struct{ *memory.Transport }

var errNoDial = errors.New("bench: the shortcut was not taken; the client tried to open a socket")

func (n noDial) Dial(_ context.Context, addr string) (transport.Socket, error) {
	return nil, fmt.Errorf("%w (%s)", errNoDial, addr)
}

// TestShortcutModes checks that the shortcut implementations time the mode
// they are named for: direct hands the caller's payload to the handler
// (Echo's reply is the caller's own slice), copy does not.
func TestShortcutModes(t *testing.T) {
	data := payload(64)
	for name, wantShared := range map[string]bool{
		"zerodial-direct":         true,
		"zerodial-direct-generic": true,
		"zerodial-copy":           false,
	} {
		t.Run(name, func(t *testing.T) {
			call := registry[name](t, size{"64B", len(data)})()
			var reply Payload
			if err := call(context.Background(), echo, &Payload{Data: data}, &reply); err != nil {
				t.Fatal(err)
			}
			if shared := &reply.Data[0] == &data[0]; shared != wantShared {
				t.Errorf("reply shares the caller's payload: %v, want %v", shared, wantShared)
			}
		})
	}
}

// zerodial's stream rows: Stream.Flow, registered with dispatch.HandleStream
// and dispatch.Borrows, called with dispatch.CallStream and
// context.Background() on five paths. On the shortcut such a context cannot
// end, so CallStream runs the handler on the caller's goroutine, each Send
// yielding to the caller's loop: in direct mode the handler's own message
// by pointer, in copy mode through msgpack once each way.
//
//   - zerodial-direct, zerodial-copy: the shortcut in ShortcutDirect and
//     ShortcutCopy mode, dialled through noDial as for the unary rows.
//   - zerodial-memory, zerodial-tcp, zerodial-mux: a Client over a socket of
//     memory.New(), tcp.New() or mux.New(), no shortcut.

func init() {
	registerStream("zerodial-direct", func(tb testing.TB) streamFunc {
		return zerodialStreamShortcut(tb, dispatch.ShortcutDirect)
	})
	registerStream("zerodial-copy", func(tb testing.TB) streamFunc {
		return zerodialStreamShortcut(tb, dispatch.ShortcutCopy)
	})
	registerStream("zerodial-memory", func(tb testing.TB) streamFunc {
		tr := memory.New()
		return dialZerodialStream(tb, tr, serveZerodial(tb, tr, "", registerFlow))
	})
	registerStream("zerodial-tcp", func(tb testing.TB) streamFunc {
		tr := tcp.New()
		return dialZerodialStream(tb, tr, serveZerodial(tb, tr, "127.0.0.1:0", registerFlow))
	})
	registerStream("zerodial-mux", func(tb testing.TB) streamFunc {
		tr := mux.New()
		tb.Cleanup(func() { tr.Close() })
		return dialZerodialStream(tb, tr, serveZerodial(tb, tr, "127.0.0.1:0", registerFlow))
	})
}

// flowMethod is the streaming method of the stream rows.
const flowMethod = "Stream.Flow"

// registerFlow registers Stream.Flow: given n, it sends messages 0 to n-1,
// filling one buffer for each (Send returns once the message may be reused:
// encoded, or in direct mode taken and let go of by the caller).
func registerFlow(srv *dispatch.Server) error {
	return dispatch.HandleStream(srv, flowMethod, func(_ context.Context, s *dispatch.ServerStream[int64, []byte]) error {
		for n, err := range s.Recv() {
			if err != nil {
				return err
			}
			msg := make([]byte, msgSize)
			for i := range int(*n) {
				fillMsg(msg, i)
				if err := s.Send(&msg); err != nil {
					return err
				}
			}
		}
		return nil
	}, dispatch.Borrows())
}

// zerodialStreamShortcut serves Stream.Flow on a memory transport and dials
// it with the shortcut in mode, through noDial.
func zerodialStreamShortcut(tb testing.TB, mode dispatch.ShortcutMode) streamFunc {
	tr := memory.New()
	addr := serveZerodial(tb, tr, "", registerFlow)
	return dialZerodialStream(tb, noDial{tr}, addr, dispatch.WithShortcut(mode))
}

// dialZerodialStream dials addr on tr and returns a streamFunc that ranges
// over dispatch.CallStream of Stream.Flow.
func dialZerodialStream(tb testing.TB, tr transport.Transport, addr string, opts ...dispatch.ClientOption) streamFunc {
	c, err := dispatch.Dial(context.Background(), tr, addr, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return func(ctx context.Context, n int) (int, error) {
		args := int64(n)
		got := 0
		for m, err := range dispatch.CallStream[int64, []byte](ctx, c, flowMethod, &args) {
			if err != nil {
				return got, err
			}
			if !msgOK(*m, got) {
				return got, errBadMsg(got, *m)
			}
			got++
		}
		return got, nil
	}
}

// TestStreamShortcutModes checks that the shortcut stream rows time the
// mode they are named for: in direct mode the caller sees the handler's own
// buffer, the same one for every message; in copy mode its own copy.
func TestStreamShortcutModes(t *testing.T) {
	for _, c := range []struct {
		name       string
		mode       dispatch.ShortcutMode
		wantShared bool
	}{
		{"zerodial-direct", dispatch.ShortcutDirect, true},
		{"zerodial-copy", dispatch.ShortcutCopy, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := memory.New()
			var sent *byte // the handler's buffer
			addr := serveZerodial(t, tr, "", func(srv *dispatch.Server) error {
				return dispatch.HandleStream(srv, flowMethod, func(_ context.Context, s *dispatch.ServerStream[int64, []byte]) error {
					msg := msgFor(0)
					sent = &msg[0]
					return s.Send(&msg)
				}, dispatch.Borrows())
			})
			cl, err := dispatch.Dial(context.Background(), noDial{tr}, addr, dispatch.WithShortcut(c.mode))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var args int64
			got := 0
			for m, err := range dispatch.CallStream[int64, []byte](context.Background(), cl, flowMethod, &args) {
				if err != nil {
					t.Fatal(err)
				}
				got++
				if !msgOK(*m, 0) {
					t.Fatal(errBadMsg(0, *m))
				}
				if shared := &(*m)[0] == sent; shared != c.wantShared {
					t.Errorf("the caller's message is the handler's buffer: %v, want %v", shared, c.wantShared)
				}
			}
			if got != 1 {
				t.Errorf("%d messages, want 1", got)
			}
		})
	}
}
