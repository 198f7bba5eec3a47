package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/transporttest"
)

// Many goroutines calling at once on one Client share one socket, and each
// gets its own reply.
func TestClientConcurrentCallsShareOneSocket(t *testing.T) {
	const goroutines, calls = 200, 20
	for _, tt := range transports {
		t.Run(tt.name, func(t *testing.T) {
			inner := tt.make(t)
			tr := &countingTransport{Transport: inner}
			srv, _, _ := newServer(t, noInterceptors)
			addr := serve(t, srv, inner, tt.listen)
			c, err := dispatch.Dial(context.Background(), tr, addr)
			require.NoError(t, err)
			defer c.Close()

			var wg sync.WaitGroup
			var failures atomic.Int32
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range calls {
						var r Reply
						err := c.Call(context.Background(), "Arith.Fill", Args{g, i}, &r)
						if err != nil || r.X != g || r.S != fmt.Sprint(i) || !slices.Equal(r.List, []int{g, i}) {
							if failures.Add(1) <= 5 {
								t.Errorf("call %d/%d: %+v, %v", g, i, r, err)
							}
							return
						}
					}
				}()
			}
			wg.Wait()
			assert.Zero(t, failures.Load())
			assert.Equal(t, int32(1), tr.dials.Load(), "every call shared the one socket")
		})
	}
}

// When the connection dies under a call (the server is closed), the call
// fails as a connection failure; once a server listens on the address
// again, the next call dials anew and succeeds.
func TestClientRedialsAfterConnectionDies(t *testing.T) {
	for _, tt := range transports {
		t.Run(tt.name, func(t *testing.T) {
			inner := tt.make(t)
			tr := &countingTransport{Transport: inner}
			srv1, _, _ := newServer(t)
			h := newHolder(t, srv1)
			addr := serve(t, srv1, inner, tt.listen)
			c, err := dispatch.Dial(context.Background(), tr, addr)
			require.NoError(t, err)
			defer c.Close()

			errc := callAsync(c, context.Background(), "Hold.Wait", intPtr(1), new(int))
			recv(t, h.started, waitLong, "the handler to start")
			require.NoError(t, srv1.Close())
			err = recv(t, errc, waitLong, "the call in flight")
			// (ErrShutdown, except when the Send of the request is caught
			// by the failure: see TestClientSendFailureIsErrShutdown.)
			assert.True(t, isConnFailure(err), "want a connection failure, got %v (%T)", err, err)

			// Nobody listens: the next call tries to dial, and is refused.
			err = c.Call(context.Background(), "Arith.Multiply", Args{2, 3}, new(int))
			require.Error(t, err)
			assert.True(t, isConnFailure(err))

			srv2, _, _ := newServer(t)
			require.Equal(t, addr, serve(t, srv2, inner, addr), "the same address again")
			dialsBefore := tr.dials.Load()
			n := new(int)
			require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{2, 3}, n))
			assert.Equal(t, 6, *n)
			assert.Equal(t, dialsBefore+1, tr.dials.Load(), "the call dialled once more")
			require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{3, 3}, n))
			assert.Equal(t, 9, *n)
			assert.Equal(t, dialsBefore+1, tr.dials.Load(), "and the new socket is kept")
		})
	}
}

// Go delivers the finished Call on its channel, on every path and over
// net/rpc.
func TestClientGo(t *testing.T) {
	for _, p := range pathsAndNetRPC() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			// A nil channel: Go makes one.
			n := new(int)
			call := e.client.Go(context.Background(), "Arith.Multiply", Args{6, 7}, n, nil)
			require.NotNil(t, call.Done)
			got := recv(t, call.Done, waitLong, "the Call")
			assert.Same(t, call, got)
			require.NoError(t, got.Error)
			assert.Equal(t, 42, *n)
			assert.Equal(t, "Arith.Multiply", got.ServiceMethod)
			assert.Equal(t, Args{6, 7}, got.Args)
			assert.Same(t, n, got.Reply)

			// One buffered channel for many calls, one of them failing.
			done := make(chan *dispatch.Call, 10)
			replies := make([]int, 9)
			for i := range replies {
				e.client.Go(context.Background(), "Arith.Multiply", Args{i, 10}, &replies[i], done)
			}
			failing := e.client.Go(context.Background(), "Arith.Fail", Args{}, new(Reply), done)
			seen := map[*dispatch.Call]bool{}
			for range 10 {
				c := recv(t, done, waitLong, "a Call")
				assert.False(t, seen[c], "a Call delivered twice")
				seen[c] = true
				if c == failing {
					assert.Equal(t, &dispatch.Error{Message: "arith: boom"}, c.Error)
				} else {
					assert.NoError(t, c.Error)
				}
			}
			for i, r := range replies {
				assert.Equal(t, i*10, r)
			}
		})
	}
}

// Go panics on an unbuffered channel, as net/rpc does, and makes no call.
func TestClientGoUnbufferedPanics(t *testing.T) {
	for _, p := range pathsAndNetRPC() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			assert.PanicsWithValue(t, "dispatch: done channel is unbuffered", func() {
				e.client.Go(context.Background(), "Arith.Multiply", Args{1, 2}, new(int), make(chan *dispatch.Call))
			})
			time.Sleep(10 * time.Millisecond)
			assert.Empty(t, e.rec.take(), "no call was made")
		})
	}
}

// Dial to an address nobody serves fails with an error matching
// ErrConnectionRefused, with the shortcut on or off.
func TestDialRefused(t *testing.T) {
	for _, tt := range transports {
		for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy, dispatch.ShortcutDirect} {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				tr := tt.make(t)
				addr := "nobody"
				switch {
				case strings.HasSuffix(tt.name, "-unix"):
					addr = "unix:" + filepath.Join(unixDir, "nobody.sock")
				case tt.name != "memory":
					addr = freeAddr(t)
				}
				c, err := dispatch.Dial(context.Background(), tr, addr, dispatch.WithShortcut(mode))
				assert.Nil(t, c)
				require.Error(t, err)
				assert.ErrorIs(t, err, transport.ErrConnectionRefused)
				assert.True(t, isConnFailure(err))
			})
		}
	}
}

// A typed-nil pointer as args is what nil args are, on every path: the
// handler gets zero arguments.
func TestTypedNilArgs(t *testing.T) {
	type result struct {
		Reply int
		Err   string
		Log   []string
	}
	all := map[string]map[string]result{}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			for _, method := range []string{"Arith.Multiply", "Arith.MultiplyPtr", "Gen.Add"} {
				for _, args := range []any{nil, (*Args)(nil)} {
					n := intPtr(5)
					err := e.client.Call(context.Background(), method, args, n)
					r := result{Reply: *n, Log: e.rec.take()}
					if err != nil {
						r.Err = err.Error()
					}
					assert.Equal(t, result{Log: []string{
						"outer> " + method + " *dispatch_test.Args {A:0 B:0} md=map[]",
						"inner> " + method + " *dispatch_test.Args {A:0 B:0} md=map[]",
						"<inner *int err=<nil>",
						"<outer *int err=<nil>",
					}}, r, "%s(%#v)", method, args)
					key := fmt.Sprintf("%s(%T)", method, args)
					if all[key] == nil {
						all[key] = map[string]result{}
					}
					all[key][p.name] = r
				}
			}
		})
	}
	for key, byPath := range all {
		for name, r := range byPath {
			assert.Equal(t, byPath[paths[0].name], r, "%s on %s", key, name)
		}
	}
}

// Bag has the slices and maps that shallow copies would share.
type Bag struct {
	List   []int
	Map    map[string]int
	Nested map[string][]string
}

func newBag() *Bag {
	return &Bag{List: []int{1, 2, 3}, Map: map[string]int{"k": 1}, Nested: map[string][]string{"n": {"x", "y"}}}
}

// keeper is a method ("Bag.Keep") that keeps what it was given and answers
// with memory of its own.
type keeper struct {
	args  chan *Bag // the handler's args, and
	reply chan any  // its reply pointer, for the test to inspect afterwards
	state *Bag      // what every reply is made of
}

func newKeeper(t *testing.T, srv *dispatch.Server) *keeper {
	k := &keeper{args: make(chan *Bag, 1), reply: make(chan any, 1), state: newBag()}
	require.NoError(t, dispatch.Handle(srv, "Bag.Keep", func(ctx context.Context, args *Bag, reply *Bag) error {
		k.args <- args
		k.reply <- reply
		reply.List = k.state.List
		reply.Map = k.state.Map
		reply.Nested = k.state.Nested
		return nil
	}))
	return k
}

// In copy mode (as on the network) caller and handler share no memory: a
// handler that keeps and changes its args after the call changes nothing of
// the caller's, and a caller that changes its reply changes nothing of the
// server's. Bag.Keep did not promise to borrow (Borrows), so a
// ShortcutDirect caller gets copy mode too. Over net/rpc, the same.
func TestCopyModeDoesNotAlias(t *testing.T) {
	for _, p := range pathsAndNetRPC() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			k := newKeeper(t, e.server)
			args := newBag()
			var reply Bag
			require.NoError(t, e.client.Call(context.Background(), "Bag.Keep", args, &reply))
			kept := recv(t, k.args, waitLong, "the handler's args")
			<-k.reply
			assert.NotSame(t, args, kept)
			assert.Equal(t, newBag(), kept, "the handler got the caller's values")
			assert.Equal(t, newBag(), &reply, "the caller got the server's values")

			// The handler changes what it kept.
			kept.List[0] = -1
			kept.Map["k"] = -1
			kept.Nested["n"][0] = "changed"
			assert.Equal(t, newBag(), args, "the caller's args changed under it")

			// The caller changes its reply, and its args.
			reply.List[0] = -2
			reply.Map["k"] = -2
			reply.Map["new"] = 1
			reply.Nested["n"][1] = "changed"
			assert.Equal(t, newBag(), k.state, "the server's state changed under it")
			args.List[1] = -3
			args.Map["k"] = -3
			assert.Equal(t, -1, kept.List[0])
			assert.Equal(t, 2, kept.List[1], "the handler's args changed under it")
			assert.Equal(t, -1, kept.Map["k"])
		})
	}
}

// In direct mode, a method that promised to borrow (Borrows) gets the
// caller's own args pointer and writes the caller's reply in place when the
// call cannot end before the handler returns; when it can (a deadline), a
// deep copy of the args and a reply of its own, moved to the caller's.
func TestDirectModeLendsToBorrowers(t *testing.T) {
	e := shortcut(t, dispatch.ShortcutDirect)
	k := &keeper{args: make(chan *Bag, 1), reply: make(chan any, 1), state: newBag()}
	require.NoError(t, dispatch.Handle(e.server, "Bag.Lend", func(ctx context.Context, args *Bag, reply *Bag) error {
		k.args <- args
		k.reply <- reply
		reply.List = append(reply.List, args.List...)
		return nil
	}, dispatch.Borrows()))

	args := newBag()
	reply := &Bag{List: []int{9}}
	require.NoError(t, e.client.Call(context.Background(), "Bag.Lend", args, reply))
	assert.Same(t, args, recv(t, k.args, waitLong, "the handler's args"), "the handler got the caller's pointer")
	assert.Same(t, reply, recv(t, k.reply, waitLong, "the handler's reply"), "the reply was written in place")
	assert.Equal(t, []int{1, 2, 3}, reply.List, "the reply was zeroed first")

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	reply = &Bag{List: []int{9}}
	require.NoError(t, e.client.Call(ctx, "Bag.Lend", args, reply))
	got := recv(t, k.args, waitLong, "the handler's args")
	assert.NotSame(t, args, got, "a call that may return early lends nothing")
	assert.Equal(t, args, got)
	assert.NotSame(t, &args.List[0], &got.List[0], "the copy is deep")
	assert.NotSame(t, reply, recv(t, k.reply, waitLong, "the handler's reply"))
	assert.Equal(t, []int{1, 2, 3}, reply.List, "the handler's reply reached the caller")
}

// Bug: a Client whose connection died and which dialled again never closes
// the dead socket. readLoop returns on a Recv error without closing it, and
// connect replaces c.conn without closing the old one, so Client.Close
// closes only the newest socket: each reconnect leaks a file descriptor
// (tcp) or a half-closed stream (mux).
func TestClientClosesDeadSockets(t *testing.T) {
	for _, tt := range transports {
		t.Run(tt.name, func(t *testing.T) {
			inner := tt.make(t)
			tr := &trackedTransport{Transport: inner}
			srv1, _, _ := newServer(t)
			addr := serve(t, srv1, inner, tt.listen)
			c, err := dispatch.Dial(context.Background(), tr, addr)
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{1, 1}, new(int)))

			require.NoError(t, srv1.Close())
			// The Client's read loop sees the connection end.
			recv(t, tr.sockets()[0].recvFailed, waitLong, "the first socket's Recv to fail")
			srv2, _, _ := newServer(t)
			serve(t, srv2, inner, addr)
			// A call racing with the read loop's notice of the failure may
			// still pick the dead connection and fail; the next one redials.
			// Over mux the first redial may open a stream on the old
			// session before the client has seen the session end: that
			// call fails too, and the one after dials a new session.
			require.Eventually(t, func() bool {
				return c.Call(context.Background(), "Arith.Multiply", Args{1, 1}, new(int)) == nil
			}, waitLong, time.Millisecond)
			socks := tr.sockets()
			require.GreaterOrEqual(t, len(socks), 2)
			require.LessOrEqual(t, len(socks), 3)

			require.NoError(t, c.Close())
			for i, s := range socks {
				assert.True(t, s.closed.Load(), "bug: socket %d of %d was never closed by the Client", i+1, len(socks))
			}
		})
	}
}

// gatedDialer is a Transport whose Dial, once blocked, waits for release
// or for its context: a slow network.
type gatedDialer struct {
	transport.Transport
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedDialer) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	if g.block.Load() {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Transport.Dial(ctx, addr)
}

// Bug: connect holds the Client's mutex for the whole Dial, with the
// context of whichever caller dials. While a dial hangs (here: one caller
// with no deadline, a network that does not answer), every other caller —
// whatever its own deadline — waits on the mutex in isClosed or connect,
// and Close waits too: neither returns until the dial does.
func TestClientSlowDialBlocksNobodyElse(t *testing.T) {
	m := memory.New()
	tr := &gatedDialer{Transport: m, entered: make(chan struct{}, 8), release: make(chan struct{})}
	srv, _, _ := newServer(t)
	addr := serve(t, srv, m, "")
	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{1, 1}, new(int)))

	// The connection dies; the calls after it dial and are refused.
	require.NoError(t, srv.Close())
	require.Eventually(t, func() bool {
		err := c.Call(context.Background(), "Arith.Multiply", Args{1, 1}, new(int))
		return isConnFailure(err) && err != dispatch.ErrShutdown
	}, waitLong, time.Millisecond)

	tr.block.Store(true)
	first := callAsync(c, context.Background(), "Arith.Multiply", Args{1, 1}, new(int))
	recv(t, tr.entered, waitLong, "the first caller's Dial")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	second := callAsync(c, ctx, "Arith.Multiply", Args{1, 1}, new(int))
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()

	secondDone, closeDone := false, false
	select {
	case err := <-second:
		secondDone = true
		// Close runs meanwhile: a call in flight when the Client closes
		// fails with ErrShutdown, one whose deadline passes first with
		// DeadlineExceeded. Either way it did not wait for the Dial.
		if !errors.Is(err, dispatch.ErrShutdown) {
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		}
	case <-time.After(waitLong): // the Dial is held until the test lets it go
		t.Errorf("bug: a caller with a 50ms deadline waited %v (and on) behind another caller's Dial", waitLong)
	}
	select {
	case err := <-closed:
		closeDone = true
		assert.NoError(t, err)
	case <-time.After(waitLong):
		t.Errorf("bug: Close waited %v (and on) behind a Dial", waitLong)
	}

	close(tr.release) // let the hung Dial go, and everything behind it
	recv(t, first, waitLong, "the first call")
	if !secondDone {
		recv(t, second, waitLong, "the second call")
	}
	if !closeDone {
		recv(t, closed, waitLong, "Close")
	}
}

// A Dial under way ends when the Client closes, though the caller's context
// never would: its call fails with ErrShutdown, and the transport's Dial
// sees its context end.
func TestClientCloseEndsDialUnderWay(t *testing.T) {
	m := memory.New()
	tr := &gatedDialer{Transport: m, entered: make(chan struct{}, 8), release: make(chan struct{})}
	defer close(tr.release)
	srv, _, _ := newServer(t)
	addr := serve(t, srv, m, "")
	c, err := dispatch.Dial(context.Background(), tr, addr)
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	require.Eventually(t, func() bool {
		err := c.Call(context.Background(), "Arith.Multiply", Args{1, 1}, new(int))
		return isConnFailure(err) && err != dispatch.ErrShutdown
	}, waitLong, time.Millisecond)

	tr.block.Store(true)
	first := callAsync(c, context.Background(), "Arith.Multiply", Args{1, 1}, new(int))
	recv(t, tr.entered, waitLong, "the caller's Dial")
	require.NoError(t, c.Close())
	require.ErrorIs(t, recv(t, first, waitLong, "the call whose Dial the Client's Close ended"), dispatch.ErrShutdown)
}

// Bug: a call's context does not bound the sending of its request. When the
// peer stops reading, Send blocks once the socket's buffers are full (64
// messages on memory), holding the send mutex; that call and every call
// queued behind the mutex then hang past their deadlines, until the socket
// fails.
func TestClientSendRespectsContext(t *testing.T) {
	m := memory.New()
	l, err := m.Listen("")
	require.NoError(t, err)
	defer l.Close()
	peer := make(chan transport.Socket, 1)
	go func() {
		s, err := l.Accept()
		if err == nil {
			peer <- s // accepted, never read
		}
		close(peer)
	}()
	c, err := dispatch.Dial(context.Background(), m, l.Addr().String())
	require.NoError(t, err)
	stuck := recv(t, peer, waitLong, "the accepted socket")

	const calls = 80
	results := make(chan error, calls)
	for range calls {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			results <- c.Call(ctx, "Arith.Multiply", Args{1, 1}, new(int))
		}()
	}
	returned, hung := 0, 0
	// The peer never reads: a call its context does not bound waits
	// until the socket closes, after this.
	deadline := time.After(waitLong)
	for returned+hung < calls {
		select {
		case err := <-results:
			returned++
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		case <-deadline:
			hung = calls - returned
		}
	}
	assert.Zero(t, hung, "bug: %d of %d calls with a 100ms deadline were still blocked after %v", hung, calls, waitLong)

	stuck.Close() // fails the blocked Send, so every call returns
	for range hung {
		recv(t, results, waitLong, "a hung call, once the socket closed")
	}
	require.NoError(t, c.Close())
}

// slowSendTransport dials sockets whose Send, once blocked, waits until
// released or until the socket is closed: a write stuck on a slow network.
type slowSendTransport struct {
	transport.Transport
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

type slowSendSocket struct {
	transport.Socket
	t      *slowSendTransport
	closed chan struct{}
	once   sync.Once
}

func (tr *slowSendTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	s, err := tr.Transport.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &slowSendSocket{Socket: s, t: tr, closed: make(chan struct{})}, nil
}

func (s *slowSendSocket) Send(m *transport.Message) error {
	if s.t.block.Load() {
		s.t.entered <- struct{}{}
		select {
		case <-s.t.release:
		case <-s.closed:
			return transport.ErrClosed
		}
	}
	return s.Socket.Send(m)
}

func (s *slowSendSocket) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.Socket.Close()
}

// Bug: "Calls in flight on the network fail with ErrShutdown" when the
// Client is closed or its connection fails (Client.Close, ErrShutdown) —
// except a call caught in Send: clientConn.send returns its own wrapped
// error ("dispatch: sending M: ...", which does not match ErrShutdown), and
// clientConn.call returns that error even when fail has already answered
// the call with ErrShutdown. Seen without the slow socket too, on mux,
// whose Send can return "stream closed by peer" after the request has
// reached the server.
func TestClientSendFailureIsErrShutdown(t *testing.T) {
	for _, how := range []string{"Client.Close", "server closes"} {
		t.Run(how, func(t *testing.T) {
			m := memory.New()
			tr := &slowSendTransport{Transport: m, entered: make(chan struct{}, 1), release: make(chan struct{})}
			srv, _, _ := newServer(t)
			addr := serve(t, srv, m, "")
			c, err := dispatch.Dial(context.Background(), tr, addr)
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.Call(context.Background(), "Arith.Multiply", Args{1, 1}, new(int)))

			tr.block.Store(true)
			errc := callAsync(c, context.Background(), "Arith.Multiply", Args{2, 2}, new(int))
			recv(t, tr.entered, waitLong, "the Send")
			if how == "Client.Close" {
				require.NoError(t, c.Close())
			} else {
				require.NoError(t, srv.Close())
				close(tr.release)
			}
			err = recv(t, errc, waitLong, "the call in flight")
			assert.True(t, isConnFailure(err))
			assert.ErrorIs(t, err, dispatch.ErrShutdown, "bug: got %q", err)
		})
	}
}

// TestGoFullDoneDropsCall: a Call that finds its done channel full is
// dropped, as net/rpc drops it, and no goroutine is left blocked.
func TestGoFullDoneDropsCall(t *testing.T) {
	e := paths[0].setup(t)
	done := make(chan *dispatch.Call, 1)
	sentinel := &dispatch.Call{}
	done <- sentinel // full
	// The server's workers, started now, are not the call's goroutine.
	for range 3 {
		require.NoError(t, e.client.Call(context.Background(), "Arith.Multiply", Args{2, 3}, new(int)))
	}
	before := goleak.IgnoreCurrent()
	e.client.Go(context.Background(), "Arith.Multiply", Args{2, 3}, new(int), done)
	// Waits for the call's goroutine to end. A server worker may start
	// meanwhile too (the reader hands the reading on to a new one when
	// the last call's worker has not yet gone back to the pool): that is
	// not the goroutine this test is about.
	goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("github.com/zerodial/transport/dispatch.(*Server).worker"))
	assert.Same(t, sentinel, <-done, "the finished Call was dropped, not queued")
	assert.Empty(t, done)
}

// A Client over a Socket made elsewhere (NewClient) calls over it, on every
// network transport, and never dials: once the socket fails, calls fail
// with ErrShutdown.
func TestNewClient(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.make(t)
			l, err := tr.Listen(tc.listen)
			require.NoError(t, err)
			defer l.Close()
			srv := whoServer(t, "dialler")
			sock, err := tr.Dial(context.Background(), l.Addr().String())
			require.NoError(t, err)
			served := make(chan struct{})
			go func() {
				srv.ServeSocket(sock)
				close(served)
			}()
			accepted, err := l.Accept()
			require.NoError(t, err)
			c, err := dispatch.NewClient(accepted)
			require.NoError(t, err)
			got, err := who(c)
			require.NoError(t, err)
			assert.Equal(t, "dialler", got)

			sock.Close() // the serving end goes
			recv(t, served, waitLong, "ServeSocket to return")
			_, err = who(c)
			assert.ErrorIs(t, err, dispatch.ErrShutdown)
			assert.Equal(t, "Who.Am over <path>: connection is shut down: the server closed the connection", pathless(err.Error()))
			_, again := who(c)
			assert.Equal(t, err, again, "a NewClient never dials")
			require.NoError(t, c.Close())
		})
	}
}

// A connection that fails under a call says why: the error matches
// ErrShutdown, as net/rpc's callers expect, and wraps the cause — here a
// server that answers with a reply no call can be matched to.
func TestConnFailureSaysWhy(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.make(t)
			l, err := tr.Listen(tc.listen)
			require.NoError(t, err)
			transporttest.Serve(t, l, func(s transport.Socket) {
				var m transport.Message
				if s.Recv(&m) == nil {
					_ = s.Send(&transport.Message{Header: map[string]string{"ServiceMethod": "Arith.Multiply"}})
				}
				_ = s.Recv(&m) // until the client hangs up
				s.Close()
			})
			c, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			err = c.Call(context.Background(), "Arith.Multiply", Args{1, 2}, new(int))
			require.ErrorIs(t, err, dispatch.ErrShutdown)
			assert.ErrorIs(t, err, transport.ErrProtocol)
			assert.Contains(t, err.Error(), "connection is shut down: ")
			assert.Contains(t, err.Error(), "reply without a valid Seq")
		})
	}
}
