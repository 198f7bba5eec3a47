package hardening

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// inFlight is how many calls are in flight when the server dies.
const inFlight = 100

// victim is a server a test can kill, and a Client of it.
type victim struct {
	client *dispatch.Client
	// held says how many calls are blocked in the server's Hold.Wait.
	held func(ctx context.Context) (int64, error)
	// kill ends the server: SIGKILL for a child process, Server.Close in
	// this process (the nearest thing there is).
	kill func()
	// restart serves again at the same address.
	restart func()
	// check, when set, checks what the path promises besides: the
	// shortcut opened no socket.
	check func(t *testing.T, phase string)
}

// TestServerKilledInFlight kills a server with 100 calls in flight on each
// of the five paths, on tcp and mux over a unix socket, and over shared
// memory, and checks that every call fails at once, all alike,
// with ErrShutdown — the error dispatch documents for the calls in flight
// when a connection fails or the Server is closed — and leaves its reply
// zero; that a call made while the server is down is refused; and that the
// same Client works again once a server is back at the address. Each
// call's error says why its connection ended.
func TestServerKilledInFlight(t *testing.T) {
	paths := []struct {
		name  string
		setup func(t *testing.T) *victim
	}{
		{"memory", inProcessVictim("memory", dispatch.ShortcutOff)},
		{"tcp", childVictim("tcp")},
		{"mux", childVictim("mux")},
		{"tcp-unix", childVictim("tcp-unix")},
		{"mux-unix", childVictim("mux-unix")},
		{"shm", childVictim("shm")},
		{"shortcut-copy", inProcessVictim("tcp", dispatch.ShortcutCopy)},
		{"shortcut-direct", inProcessVictim("tcp", dispatch.ShortcutDirect)},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			v := p.setup(t)
			killInFlight(t, v)
		})
	}
}

func killInFlight(t *testing.T, v *victim) {
	// Half the calls have a context that can end, half one that cannot:
	// on the shortcut they take different ways (a server goroutine, or
	// the caller's own), and both must fail the same.
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		err   error
		reply int
		at    time.Time
	}
	results := make(chan result, inFlight)
	var wg sync.WaitGroup
	for i := range inFlight {
		ctx := context.Background()
		if i%2 == 1 {
			ctx = cancelable
		}
		wg.Go(func() {
			args, reply := i+1, -1
			err := v.client.Call(ctx, "Hold.Wait", &args, &reply)
			results <- result{err, reply, time.Now()}
		})
	}
	defer wg.Wait()

	// Kill only once every call is in the handler.
	waitHeld(t, v, inFlight)
	if v.check != nil {
		v.check(t, "with the calls in flight")
	}

	killed := time.Now()
	v.kill()
	// The issue names a second, what an idle machine shows (the slowest is
	// logged); the bound asserted is 5 s, which a loaded machine running
	// the race detector keeps, and which still tells a call that noticed
	// the death from one that waits for ever (the 10 s bound below).
	limit := 5 * time.Second
	kinds := map[string]int{}
	var slowest time.Duration
	for range inFlight {
		select {
		case r := <-results:
			took := r.at.Sub(killed)
			slowest = max(slowest, took)
			kinds[errKind(r.err)]++
			if r.err != nil && !namesCause(r.err) {
				t.Errorf("a call failed with %q, which does not say why the connection ended", r.err)
			}
			if r.reply != 0 {
				t.Errorf("a failed call left its reply %d, not zero", r.reply)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("calls still in flight 10 s after the server died (%v returned so far)", kinds)
		}
	}
	t.Logf("%d calls returned within %v of the kill: %v", inFlight, slowest.Round(time.Millisecond), kinds)
	if slowest > limit {
		t.Errorf("the last call returned %v after the server died; want within %v", slowest, limit)
	}
	if len(kinds) != 1 || kinds["ErrShutdown"] != inFlight {
		t.Errorf("the %d calls failed as %v; want all with ErrShutdown", inFlight, kinds)
	}

	// While nobody serves the address, a call is refused, at once.
	ctx, cancelDown := context.WithTimeout(context.Background(), 2*limit)
	var n int64
	start := time.Now()
	err := v.client.Call(ctx, "Hold.Count", nil, &n)
	cancelDown()
	if !errors.Is(err, transport.ErrConnectionRefused) {
		t.Errorf("a call with the server down returned %v (%s); want an error matching transport.ErrConnectionRefused", err, errKind(err))
	}
	if took := time.Since(start); took > limit {
		t.Errorf("a call with the server down took %v; want it refused at once", took)
	}

	// Back again: the same Client dials it on the next call.
	v.restart()
	ctx, cancelUp := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelUp()
	for i := range 3 {
		if err := echo(ctx, v.client, uint64(i), []byte("back again")); err != nil {
			t.Fatalf("call %d after the restart: %v (%s); want the same Client to work again", i, err, errKind(err))
		}
	}
	if v.check != nil {
		v.check(t, "after the restart")
	}
}

// namesCause reports whether err, a call's failure with its connection,
// says why the connection ended ("connection is shut down: the server
// closed the connection"), as dispatch's words for it do, rather than
// only that it did.
func namesCause(err error) bool {
	_, cause, ok := strings.Cut(err.Error(), "connection is shut down: ")
	return ok && strings.TrimSpace(cause) != ""
}

// waitHeld waits until n calls are blocked in the server.
func waitHeld(t *testing.T, v *victim, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := v.held(ctx)
		cancel()
		if err != nil {
			t.Fatalf("counting the calls in flight: %v", err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls reached the handler within 20 s", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// inProcessVictim serves the service in this process over kind, dialled
// with the shortcut in mode (or none), and kills it with Server.Close.
func inProcessVictim(kind string, mode dispatch.ShortcutMode) func(t *testing.T) *victim {
	return func(t *testing.T) *victim {
		tr := &countingTransport{Transport: newTransport(t, kind)}
		listen := "127.0.0.1:0"
		if kind == "memory" {
			listen = ""
		}
		srv, svc := newServer(t)
		addr := serve(t, srv, tr, listen)
		var opts []dispatch.ClientOption
		if mode != dispatch.ShortcutOff {
			opts = append(opts, dispatch.WithShortcut(mode))
		}
		c := dial(t, tr, addr, opts...)
		v := &victim{
			client: c,
			held:   func(context.Context) (int64, error) { return svc.held.Load(), nil },
			kill:   func() { srv.Close() },
			restart: func() {
				srv2, _ := newServer(t)
				if got := serve(t, srv2, tr, addr); got != addr {
					t.Fatalf("restarted at %s, not %s", got, addr)
				}
			},
		}
		if mode != dispatch.ShortcutOff {
			// The shortcut never dials while a server of this process
			// serves the address; the one call made with none does.
			v.check = func(t *testing.T, phase string) {
				want := int32(0)
				if phase == "after the restart" {
					want = 1
				}
				if got := tr.dials.Load(); got != want {
					t.Errorf("%s: the shortcut Client dialled %d times; want %d", phase, got, want)
				}
			}
		}
		return v
	}
}

// childVictim serves the service over kind in a child process, killed with
// SIGKILL.
func childVictim(kind string) func(t *testing.T) *victim {
	return func(t *testing.T) *victim {
		ch := startChild(t, kind, listenAddr(t, kind))
		addr := ch.addr
		tr := newTransport(t, kind)
		c := dial(t, tr, addr)
		// A second Client asks how many calls are held: the first one's
		// calls are all blocked.
		counter := dial(t, tr, addr)
		return &victim{
			client: c,
			held: func(ctx context.Context) (int64, error) {
				var n int64
				err := counter.Call(ctx, "Hold.Count", nil, &n)
				return n, err
			},
			kill: ch.kill,
			restart: func() {
				again := startChild(t, kind, addr)
				if again.addr != addr {
					t.Fatalf("the restarted child serves %s, not %s", again.addr, addr)
				}
			},
		}
	}
}
