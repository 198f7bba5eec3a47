package dispatch_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
)

var shortcutModes = []dispatch.ShortcutMode{dispatch.ShortcutCopy, dispatch.ShortcutDirect}

// Two Servers on two addresses, each registering the same service name:
// each shortcut Client reaches the Server of the address it dialled.
func TestRegistryServersDoNotShadowEachOther(t *testing.T) {
	for _, mode := range shortcutModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr := &countingTransport{Transport: tcp.New()}
			addrA := serve(t, whoServer(t, "A"), tr, "127.0.0.1:0")
			addrB := serve(t, whoServer(t, "B"), tr, "127.0.0.1:0")
			ca, err := dispatch.Dial(context.Background(), tr, addrA, dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer ca.Close()
			cb, err := dispatch.Dial(context.Background(), tr, addrB, dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer cb.Close()
			for range 3 { // and stays so: the clients' caches do not mix
				got, err := who(ca)
				require.NoError(t, err)
				assert.Equal(t, "A", got)
				got, err = who(cb)
				require.NoError(t, err)
				assert.Equal(t, "B", got)
			}
			assert.Zero(t, tr.dials.Load(), "both calls took the shortcut")
		})
	}
}

// When the listener a Server serves is closed by its owner, the Server
// stops serving it and the shortcut entry goes with it: calls go to the
// transport, and fail to connect, as a network client's do.
func TestRegistryEntryEndsWithListener(t *testing.T) {
	for _, mode := range shortcutModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr := &countingTransport{Transport: tcp.New()}
			srv := whoServer(t, "A")
			l, err := tr.Listen("127.0.0.1:0")
			require.NoError(t, err)
			require.NoError(t, srv.Start(l))
			c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer c.Close()
			got, err := who(c)
			require.NoError(t, err)
			require.Equal(t, "A", got)
			require.Zero(t, tr.dials.Load())

			require.NoError(t, l.Close())
			// The accept loop notices the close on its own time (see
			// TestRegistryEntryEndsWhenListenerCloses for the window).
			for deadline := time.Now().Add(waitLong); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if got, err = who(c); err != nil {
					break
				}
				require.Equal(t, "A", got)
			}
			assert.ErrorIs(t, err, transport.ErrConnectionRefused)
			assert.True(t, isConnFailure(err))
			assert.Equal(t, int32(1), tr.dials.Load(), "the call went to the transport")

			// The Server itself still works for a Client of a new listener.
			addr2 := serve(t, srv, tr, "127.0.0.1:0")
			c2, err := dispatch.Dial(context.Background(), tr, addr2, dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer c2.Close()
			got, err = who(c2)
			require.NoError(t, err)
			assert.Equal(t, "A", got)
			assert.Equal(t, int32(1), tr.dials.Load())
		})
	}
}

// A Client dialling localhost:PORT reaches a Server listening on
// 127.0.0.1:PORT through the shortcut: no Dial happens.
func TestRegistryLocalhostFindsLoopbackServer(t *testing.T) {
	for _, mode := range shortcutModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr := &countingTransport{Transport: tcp.New()}
			addr := serve(t, whoServer(t, "loopback"), tr, "127.0.0.1:0")
			_, port, err := net.SplitHostPort(addr)
			require.NoError(t, err)
			c, err := dispatch.Dial(context.Background(), tr, "localhost:"+port, dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer c.Close()
			got, err := who(c)
			require.NoError(t, err)
			assert.Equal(t, "loopback", got)
			assert.Zero(t, tr.dials.Load(), "localhost took the shortcut")

			// Without the shortcut the same Client dials, and reaches the
			// same Server.
			c2, err := dispatch.Dial(context.Background(), tr, "localhost:"+port)
			require.NoError(t, err)
			defer c2.Close()
			got, err = who(c2)
			require.NoError(t, err)
			assert.Equal(t, "loopback", got)
			assert.Equal(t, int32(1), tr.dials.Load())
		})
	}
}

// Two memory Transports are two address spaces: each may have a listener
// named "svc", and each Transport's shortcut Clients reach their own
// Transport's Server.
func TestRegistryMemoryAddressSpaces(t *testing.T) {
	for _, mode := range shortcutModes {
		t.Run(mode.String(), func(t *testing.T) {
			m1, m2 := memory.New(), memory.New()
			t1, t2 := countMemory(m1), countMemory(m2)
			require.Equal(t, "svc", serve(t, whoServer(t, "one"), m1, "svc"))
			require.Equal(t, "svc", serve(t, whoServer(t, "two"), m2, "svc"))
			c1, err := dispatch.Dial(context.Background(), t1, "svc", dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer c1.Close()
			c2, err := dispatch.Dial(context.Background(), t2, "svc", dispatch.WithShortcut(mode))
			require.NoError(t, err)
			defer c2.Close()
			for range 2 {
				got, err := who(c1)
				require.NoError(t, err)
				assert.Equal(t, "one", got)
				got, err = who(c2)
				require.NoError(t, err)
				assert.Equal(t, "two", got)
			}
			assert.Zero(t, t1.dials.Load())
			assert.Zero(t, t2.dials.Load())

			// A third memory Transport has no "svc": no shortcut to either,
			// and its Dial is refused.
			_, err = dispatch.Dial(context.Background(), countMemory(memory.New()), "svc", dispatch.WithShortcut(mode))
			assert.ErrorIs(t, err, transport.ErrConnectionRefused)

			// And a tcp Client dialling "svc" does not find them either.
			_, err = dispatch.Dial(context.Background(), tcp.New(), "svc", dispatch.WithShortcut(mode))
			require.Error(t, err)
		})
	}
}

// A shortcut Client whose address no Server of this process serves (the
// socket is served by hand, with ServeSocket, which makes no entry) uses the
// transport exactly as a Client without the option does.
func TestRegistryUnservedAddressUsesTransport(t *testing.T) {
	for _, tt := range transports {
		for _, mode := range shortcutModes {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				inner := tt.make(t)
				var tr transport.Transport = &countingTransport{Transport: inner}
				var dials func() int32 = tr.(*countingTransport).dials.Load
				if m, ok := inner.(*memory.Transport); ok {
					sc := countMemory(m)
					tr, dials = sc, sc.dials.Load
				}
				srv, _, rec := newServer(t)
				t.Cleanup(func() { srv.Close() })
				l, err := inner.Listen(tt.listen)
				require.NoError(t, err)
				accepted := make(chan struct{})
				go func() {
					defer close(accepted)
					for {
						s, err := l.Accept()
						if err != nil {
							return
						}
						go srv.ServeSocket(s)
					}
				}()
				defer func() { l.Close(); <-accepted }()

				c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(mode))
				require.NoError(t, err)
				defer c.Close()
				assert.Equal(t, int32(1), dials(), "Dial connected at once")
				args := &Args{6, 7}
				n := new(int)
				require.NoError(t, c.Call(context.Background(), "Arith.MultiplyPtr", args, n))
				assert.Equal(t, 42, *n)
				require.NoError(t, c.Call(context.Background(), "Arith.MultiplyPtr", args, n))
				assert.Equal(t, int32(1), dials(), "one socket for both calls")
				log := rec.take()
				require.NotEmpty(t, log)
				assert.True(t, strings.HasPrefix(log[0], "outer> Arith.MultiplyPtr *dispatch_test.Args {A:6 B:7}"), log[0])

				// A handler error crosses as it does without the option.
				err = c.Call(context.Background(), "Arith.Fail", Args{}, new(Reply))
				assert.Equal(t, &dispatch.Error{Code: dispatch.CodeUnknown, Message: "arith: boom"}, err)
			})
		}
	}
}

// The shortcut entry ends the moment the listener's Close returns, not
// when the Server's accept loop gets round to noticing: a network Client is
// refused from that moment, and so is a shortcut Client. (The lingering
// listener holds the accept loop's window open.)
func TestRegistryEntryEndsWhenListenerCloses(t *testing.T) {
	m := memory.New()
	tr := countMemory(m)
	srv := whoServer(t, "A")
	inner, err := m.Listen("svc")
	require.NoError(t, err)
	l := &lingeringListener{Listener: inner, hold: make(chan struct{})}
	defer close(l.hold)
	require.NoError(t, srv.Start(l))
	c, err := dispatch.Dial(context.Background(), tr, "svc", dispatch.WithShortcut(dispatch.ShortcutCopy))
	require.NoError(t, err)
	defer c.Close()
	got, err := who(c)
	require.NoError(t, err)
	require.Equal(t, "A", got)

	require.NoError(t, inner.Close())
	_, err = m.Dial(context.Background(), "svc")
	require.ErrorIs(t, err, transport.ErrConnectionRefused, "the address is free")
	got, err = who(c)
	assert.ErrorIs(t, err, transport.ErrConnectionRefused,
		"the shortcut still reached the Server (reply %q) after its listener was closed", got)
}

// After a listener is closed and its address bound again by another
// Server, a shortcut Client of that address reaches the new Server, as a
// network Client does — also by a derived form of the address (localhost)
// — and keeps reaching it once the old Server's accept loop has ended and
// removed its own entries.
func TestRegistryRebindReachesNewServer(t *testing.T) {
	for _, tt := range transports[:2] { // memory, tcp
		t.Run(tt.name, func(t *testing.T) {
			inner := tt.make(t)
			var tr transport.Transport = &countingTransport{Transport: inner}
			dials := tr.(*countingTransport).dials.Load
			if m, ok := inner.(*memory.Transport); ok {
				sc := countMemory(m)
				tr, dials = sc, sc.dials.Load
			}
			il, err := inner.Listen(tt.listen)
			require.NoError(t, err)
			addr := il.Addr().String()
			l := &lingeringListener{Listener: il, hold: make(chan struct{})}
			oldSrv := whoServer(t, "old")
			require.NoError(t, oldSrv.Start(l))
			require.NoError(t, il.Close()) // the old accept loop has not noticed yet

			require.Equal(t, addr, serve(t, whoServer(t, "new"), inner, addr))
			nc, err := dispatch.Dial(context.Background(), inner, addr)
			require.NoError(t, err)
			defer nc.Close()
			got, err := who(nc)
			require.NoError(t, err)
			require.Equal(t, "new", got, "over the network, the address is the new Server's")

			dialled := []string{addr}
			if tt.name == "tcp" {
				_, port, err := net.SplitHostPort(addr)
				require.NoError(t, err)
				dialled = append(dialled, "localhost:"+port)
			}
			var clients []*dispatch.Client
			for _, a := range dialled {
				c, err := dispatch.Dial(context.Background(), tr, a, dispatch.WithShortcut(dispatch.ShortcutCopy))
				require.NoError(t, err)
				defer c.Close()
				clients = append(clients, c)
				got, err := who(c)
				require.NoError(t, err)
				assert.Equal(t, "new", got, "dialling %s: the shortcut reached the Server whose listener is closed", a)
			}

			// Let the old accept loop end and remove its entries: Close
			// waits for it.
			close(l.hold)
			require.NoError(t, oldSrv.Close())
			for i, c := range clients {
				got, err := who(c)
				require.NoError(t, err)
				assert.Equal(t, "new", got, dialled[i])
			}
			assert.Zero(t, dials(), "every call took the shortcut")
		})
	}
}
