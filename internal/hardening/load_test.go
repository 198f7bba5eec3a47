package hardening

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerodial/transport/dispatch"
)

var loadFull = flag.Bool("load", false, "TestLoad: run the full size, 64 clients × 10,000 calls on each transport, instead of 64 × 100")

const (
	loadClients = 64
	// loadCallers is how many goroutines share each Client, so that replies
	// on one connection come back out of order and must be matched.
	loadCallers = 4
	minBody     = 16
	maxBody     = 64 << 10
)

// TestLoad runs 64 Clients, each of its own connection (tcp) or stream on
// one shared session (mux), making calls whose bodies are random bytes of
// random lengths from 16 B to 64 KiB. Every reply must be its own request's
// body, sequence number and client; the server must run every call exactly
// once (none lost, none duplicated). After the Clients and the Server are
// closed, goroutines, open file descriptors and live heap must be back
// within 10% of what they were before.
//
// By default each Client makes 100 calls (48 under the race detector), short
// enough for CI; -load makes it 10,000 (go test ./internal/hardening -run Load
// -load).
func TestLoad(t *testing.T) {
	calls := 100
	if raceEnabled {
		calls = 48 // the race detector makes a call some ten times slower
	}
	if *loadFull {
		calls = 10_000
	}
	for _, kind := range []string{"tcp", "mux"} {
		t.Run(kind, func(t *testing.T) {
			// A first short run with as many Clients pays for what the
			// process keeps once it has been used, however long: the
			// netpoller's descriptors, the codec's type information, and
			// the runtime's record of every goroutine that ever ran at
			// once (it reuses a finished goroutine's record, and never
			// frees it: some 200 KiB for the few hundred goroutines of
			// this test). What the real run leaves above that is what
			// it leaks.
			t.Run("warm-up", func(t *testing.T) { loadRun(t, kind, loadClients, 2*loadCallers) })
			reserveGoroutines(goroutineReserve)
			before := measure(t)
			start := time.Now()
			if !t.Run(fmt.Sprintf("%dx%d", loadClients, calls), func(t *testing.T) { loadRun(t, kind, loadClients, calls) }) {
				return
			}
			took := time.Since(start)
			after := settle(t, before)
			t.Logf("%d clients × %d calls over %s in %v; before → after: goroutines %d → %d, fds %d → %d, heap %s → %s",
				loadClients, calls, kind, took.Round(time.Millisecond),
				before.goroutines, after.goroutines, before.fds, after.fds, mib(before.heap), mib(after.heap))
		})
	}
}

// loadRun serves the service over kind, runs clients Clients of calls calls
// each, checks every reply, and closes everything before it returns (the
// subtest's clean-ups run when it ends).
func loadRun(t *testing.T, kind string, clients, calls int) {
	// seen[c][s] says that the server ran client c's call s.
	seen := make([][]atomic.Bool, clients)
	for i := range seen {
		seen[i] = make([]atomic.Bool, calls)
	}
	var ran, duplicated, foreign atomic.Int64
	tr := newTransport(t, kind)
	srv := dispatch.NewServer()
	svc := newService()
	svc.onEcho = func(m *Msg) {
		if m.Client < 0 || m.Client >= clients || m.Seq >= uint64(calls) {
			foreign.Add(1)
			return
		}
		ran.Add(1)
		if seen[m.Client][m.Seq].Swap(true) {
			duplicated.Add(1)
		}
	}
	if err := svc.register(srv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	addr := serve(t, srv, tr, "127.0.0.1:0")

	// The bodies are slices of one block of random bytes, at random
	// offsets: as good as fresh random bytes for telling replies apart,
	// without generating 64 KiB for every call.
	pool := make([]byte, 2*maxBody)
	src := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))
	for i := range pool {
		pool[i] = byte(src.Uint32())
	}

	var failed, mismatched atomic.Int64
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for id := range clients {
		c := dial(t, tr, addr)
		for caller := range loadCallers {
			seed := src.Uint64()
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(id)))
				for j := caller; j < calls; j += loadCallers {
					// Lengths are spread evenly over the powers of two
					// from 16 B to 64 KiB (log-uniform), so small and
					// large bodies are both common; uniform lengths
					// would make nearly all of them larger than 1 KiB.
					n := int(math.Round(minBody * math.Pow(2, 12*r.Float64())))
					off := r.IntN(len(pool) - n + 1)
					body := pool[off : off+n]
					args := &Msg{Client: id, Seq: uint64(j), Body: body}
					var reply Msg
					if err := c.Call(ctx, "Echo.Echo", args, &reply); err != nil {
						failed.Add(1)
						report("client %d call %d (%d B): %v", id, j, n, err)
						continue
					}
					if reply.Client != id || reply.Seq != uint64(j) || !bytes.Equal(reply.Body, body) {
						mismatched.Add(1)
						report("client %d call %d (%d B) came back as client %d call %d (%d B)",
							id, j, n, reply.Client, reply.Seq, len(reply.Body))
					}
				}
			})
		}
	}
	wg.Wait()

	total := int64(clients * calls)
	missing := int64(0)
	for i := range seen {
		for j := range seen[i] {
			if !seen[i][j].Load() {
				missing++
			}
		}
	}
	if failed.Load() != 0 || mismatched.Load() != 0 || missing != 0 || duplicated.Load() != 0 || foreign.Load() != 0 || ran.Load() != total {
		t.Errorf("%d calls: %d failed, %d mismatched replies; the server ran %d calls: %d never, %d twice, %d it was never sent; first problems: %q",
			total, failed.Load(), mismatched.Load(), ran.Load(), missing, duplicated.Load(), foreign.Load(), problems)
	}
}

// usage is what a test may leak.
type usage struct {
	goroutines int    // not counting a Server's idle workers (busyGoroutines)
	fds        int    // open file descriptors
	heap       uint64 // live heap after a collection (HeapAlloc)
}

func measure(t testing.TB) usage {
	g := busyGoroutines()
	// Two collections: sync.Pool keeps what it held through one (as its
	// victim cache), and frees it at the second.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{goroutines: g, fds: countFDs(t), heap: ms.HeapAlloc}
}

// busyGoroutines counts the goroutines, less a Server's idle workers. A
// Server keeps up to 16 × GOMAXPROCS workers waiting for the next call or
// connection once they have served one, until it is closed: a pool, by
// design, which a run can grow and which does not shrink; a goroutine
// waiting there serves nobody. An idle worker is one whose stack has the
// worker loop on top (dispatch's (*workerPool).serve); one running a task
// has the task above it. TestIdleWorkersRecognised pins the name.
// idleWorkerFrame starts the top frame of an idle dispatch worker's stack.
var idleWorkerFrame = []byte("github.com/zerodial/transport/dispatch.(*workerPool).serve(")

func busyGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	busy := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		_, rest, _ := bytes.Cut(g, []byte("\n"))
		if !bytes.HasPrefix(rest, idleWorkerFrame) {
			busy++
		}
	}
	return busy
}

// Absolute slack on top of 10%. The baselines are tiny — three goroutines,
// ten descriptors, about a MiB of heap — so 10% of a count is less than one:
// goroutines and descriptors must come back exactly (settle waits for the
// stragglers that end just after Close returns). The heap gets 64 KiB more
// than its 10% for what the testing package itself keeps between subtests
// (their names, results and output); a buffer kept per connection, 4 KiB
// for each of the 64, would still exceed it.
const (
	goroutineSlack = 0
	fdSlack        = 0
	heapSlack      = 64 << 10
)

// within reports whether after is within 10% of before, plus slack.
func within(before, after, slack uint64) bool {
	return after <= before+max(before/10, slack)
}

func (u usage) within(before usage) bool {
	return within(uint64(before.goroutines), uint64(u.goroutines), goroutineSlack) &&
		within(uint64(before.fds), uint64(u.fds), fdSlack) &&
		within(before.heap, u.heap, heapSlack)
}

// settle waits, for a few seconds at most, for what the closed Clients and
// Servers held to be released — goroutines end and descriptors close
// shortly after Close returns — and fails the test if usage is not back
// within bounds of before.
func settle(t *testing.T, before usage) usage {
	t.Helper()
	deadline := time.Now().Add(bound(5 * time.Second))
	for {
		u := measure(t)
		if u.within(before) {
			return u
		}
		if time.Now().After(deadline) {
			t.Errorf("not released after close: goroutines %d → %d, fds %d → %d, heap %s → %s (allowed: 10%% plus %d goroutines, %d fds, %s)",
				before.goroutines, u.goroutines, before.fds, u.fds, mib(before.heap), mib(u.heap), goroutineSlack, fdSlack, mib(heapSlack))
			buf := make([]byte, 1<<20)
			t.Logf("goroutines:\n%s", buf[:runtime.Stack(buf, true)])
			return u
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goroutineReserve is more goroutines than a load run has at once (some
// 700: the callers, a reader per connection on each end, a server worker
// per call in flight, the transports' own).
const goroutineReserve = 2048

// reserveGoroutines has n goroutines run at once, and end. The runtime
// keeps the record of every goroutine it ever made (a few hundred bytes of
// heap each) for reuse, and never frees it; so that a run with more
// goroutines at once than any before it does not read as a leak, the
// baseline is measured with records for more than the run needs.
func reserveGoroutines(n int) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range n {
		wg.Go(func() { <-stop })
	}
	close(stop)
	wg.Wait()
}

func mib(n uint64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// TestIdleWorkersRecognised: once a Server has served a connection that
// then closed, busyGoroutines finds its worker idle. The count leans on the
// name of dispatch's worker loop; when that name changes, this fails, where
// the cost tests would count every idle worker as a leak.
func TestIdleWorkersRecognised(t *testing.T) {
	tr := newTransport(t, "tcp")
	srv, _ := newServer(t)
	addr := serve(t, srv, tr, "127.0.0.1:0")
	wellBehaved(t, "tcp", addr)
	deadline := time.Now().Add(bound(5 * time.Second))
	for busyGoroutines() == runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("no goroutine's top frame starts with %q:\n%s", idleWorkerFrame, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
