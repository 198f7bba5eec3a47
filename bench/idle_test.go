package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// Idle cost. BenchmarkIdle/<row> opens idleConns() connections (10,000 with
// ZERODIAL_BENCH_IDLE_CONNS=10000, as the report runs it; 200 by default,
// so that the CI smoke run stays quick) from clients of this process to one
// server of this process, makes one 16B call on each (an idle connection
// is one that has carried calls, with whatever buffers that left it), lets
// them sit, and measures what they hold, per connection:
//
//   - heap-B/conn: the live heap (MemStats.HeapAlloc after two GCs) with
//     the connections open, minus the same before the first was opened
//     (the server already listening), divided by their number;
//   - stack-B/conn: the same of MemStats.StackInuse (goroutine stacks);
//   - goroutines/conn: runtime.NumGoroutine, the same way;
//     client-goroutines/conn and server-goroutines/conn split it by the end
//     that started them (each end's setup runs under a pprof label that
//     the goroutines it starts inherit; the goroutine profile counts them).
//
// Both ends are in this process, so the bytes are the two ends together;
// kernel socket buffers are not counted. One op is one round: open the
// connections, measure, close everything and wait for it to be gone; run
// it with -benchtime=1x (the report does). The rows:
//
//   - zerodial-tcp: one Client per connection, each dialling the Server
//     over tcp.New(): a TCP connection each.
//   - zerodial-mux: one Client per connection, each with its own
//     mux.Transport: a session (TCP connection) each, one stream on it.
//   - zerodial-mux-streams: every Client over one mux.Transport, so one
//     session carries all the connections, each a yamux stream
//     (WithStreamLimit(0) on both ends: no limit).
//   - netrpc-tcp: one rpc.Client per TCP connection, the server's
//     ServeConn on each.
//   - netrpc-yamux-streams: one rpc.Client per yamux stream, every stream
//     on one session, the server's ServeConn on each.
//   - grpc-tcp: one grpc.ClientConn per connection (connected by its call).
//   - floor-yamux-streams: bare yamux streams of one session, opened and
//     accepted, nobody reading: what yamux itself holds per stream.

// idleOrder is the order of BenchmarkIdle's rows and of the report's table.
var idleOrder = []string{
	"zerodial-tcp",
	"zerodial-mux",
	"zerodial-mux-streams",
	"netrpc-tcp",
	"netrpc-yamux-streams",
	"grpc-tcp",
	"floor-yamux-streams",
}

// idleRow starts a row's server (its goroutines are the server's) and
// returns connect, which opens one connection, makes its call and returns
// what closes it. client runs f as the client end, for what the clients
// share (a transport, a session). Everything else start starts is stopped,
// and waited for, by cleanups registered on tb.
type idleRow struct {
	fds   int // file descriptors each connection takes, both ends
	start func(tb testing.TB, client func(f func())) (connect func() (func(), error))
}

var idleRows = map[string]idleRow{
	"zerodial-tcp":         {2, idleZerodialTCP},
	"zerodial-mux":         {2, idleZerodialMux},
	"zerodial-mux-streams": {0, idleZerodialMuxStreams},
	"netrpc-tcp":           {2, idleNetRPCTCP},
	"netrpc-yamux-streams": {0, idleNetRPCYamuxStreams},
	"grpc-tcp":             {2, idleGRPCTCP},
	"floor-yamux-streams":  {0, idleYamuxStreams},
}

// idleConnsEnv names the environment variable that sets the number of
// connections of BenchmarkIdle.
const idleConnsEnv = "ZERODIAL_BENCH_IDLE_CONNS"

// idleConns is the number of connections BenchmarkIdle opens per row.
func idleConns(tb testing.TB) int {
	v := os.Getenv(idleConnsEnv)
	if v == "" {
		return 200
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		tb.Fatalf("%s=%q: want a positive number", idleConnsEnv, v)
	}
	return n
}

func BenchmarkIdle(b *testing.B) {
	n := idleConns(b)
	for _, name := range idleOrder {
		b.Run(name, func(b *testing.B) {
			row := idleRows[name]
			if err := ensureFDs(row.fds*n + 256); err != nil {
				msg := fmt.Sprintf("skipped: %d connections need %d file descriptors (%d each, both ends in this process, and 256 to spare): %v; set %s lower",
					n, row.fds*n+256, row.fds, err, idleConnsEnv)
				// Also on standard error, which go test shows without -v.
				fmt.Fprintf(os.Stderr, "idle row %s %s\n", name, msg)
				b.Skip(msg)
			}
			var sum idleCost
			for range b.N {
				c := measureIdle(b, row, n)
				sum.heap += c.heap
				sum.stack += c.stack
				sum.goroutines += c.goroutines
				sum.client += c.client
				sum.server += c.server
			}
			per := float64(n) * float64(b.N)
			b.ReportMetric(float64(n), "conns")
			b.ReportMetric(sum.heap/per, "heap-B/conn")
			b.ReportMetric(sum.stack/per, "stack-B/conn")
			b.ReportMetric(sum.goroutines/per, "goroutines/conn")
			b.ReportMetric(sum.client/per, "client-goroutines/conn")
			b.ReportMetric(sum.server/per, "server-goroutines/conn")
		})
	}
}

// idleCost is what n open connections added: bytes and goroutines.
type idleCost struct {
	heap, stack, goroutines, client, server float64
}

// measureIdle runs one round of row with n connections and returns what
// they added.
func measureIdle(tb testing.TB, row idleRow, n int) idleCost {
	r := &roundTB{TB: tb}
	defer r.done()
	before0 := runtime.NumGoroutine()
	serverCtx, clientCtx := endCtx("server"), endCtx("client")
	pprof.SetGoroutineLabels(serverCtx)
	connect := row.start(r, func(f func()) {
		pprof.SetGoroutineLabels(clientCtx)
		defer pprof.SetGoroutineLabels(serverCtx)
		f()
	})
	pprof.SetGoroutineLabels(context.Background())
	base := snapshotIdle()

	closers := make([]func(), n)
	var next atomic.Int64
	var failed atomic.Value
	pprof.Do(clientCtx, pprof.Labels(), func(context.Context) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= n || failed.Load() != nil {
						return
					}
					c, err := connect()
					if err != nil {
						failed.Store(fmt.Errorf("connection %d: %w", i, err))
						return
					}
					closers[i] = c
				}
			})
		}
		wg.Wait()
	})
	defer func() {
		for _, c := range closers {
			if c != nil {
				c()
			}
		}
	}()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the last handshakes' goroutines settle
	open := snapshotIdle()

	// Close: every connection, then the server (r.done); wait until the
	// round's goroutines are gone, so that the next round starts from where
	// this one did.
	for i, c := range closers {
		c()
		closers[i] = nil
	}
	r.done()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return idleCost{
		heap:       float64(open.heap) - float64(base.heap),
		stack:      float64(open.stack) - float64(base.stack),
		goroutines: float64(open.goroutines - base.goroutines),
		client:     float64(open.client - base.client),
		server:     float64(open.server - base.server),
	}
}

type idleSnapshot struct {
	heap, stack                uint64
	goroutines, client, server int
}

// snapshotIdle collects garbage and reads the live heap, the stacks and the
// goroutines, by end.
func snapshotIdle() idleSnapshot {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := idleSnapshot{heap: ms.HeapAlloc, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
	by := goroutinesByEnd()
	s.client, s.server = by["client"], by["server"]
	return s
}

// idleLabel is the pprof label that tells the ends' goroutines apart.
const idleLabel = "idle-end"

// endCtx returns a context with the goroutine label idle-end=end: a
// goroutine given it (pprof.SetGoroutineLabels, pprof.Do) carries the
// label, and so does every goroutine it starts, and every goroutine those
// start.
func endCtx(end string) context.Context {
	return pprof.WithLabels(context.Background(), pprof.Labels(idleLabel, end))
}

// goroutinesByEnd counts the goroutines by their idle-end label, from the
// goroutine profile in its text form (debug=1: "N @ pcs", then "# labels:
// {...}" for labelled ones).
func goroutinesByEnd() map[string]int {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil
	}
	return countByLabel(buf.String())
}

func countByLabel(profile string) map[string]int {
	out := map[string]int{}
	count, end := 0, ""
	flush := func() {
		if count > 0 {
			out[end] += count
		}
		count, end = 0, ""
	}
	for line := range strings.Lines(profile) {
		if c, _, ok := strings.Cut(line, " @ "); ok {
			if v, err := strconv.Atoi(c); err == nil {
				flush()
				count = v
				continue
			}
		}
		if l, ok := strings.CutPrefix(line, "# labels: "); ok {
			for _, e := range []string{"client", "server"} {
				if strings.Contains(l, strconv.Quote(idleLabel)+":"+strconv.Quote(e)) {
					end = e
				}
			}
		}
	}
	flush()
	return out
}

// roundTB runs the cleanups registered on it when done is called, not when
// the benchmark ends, so that every round of BenchmarkIdle stops what it
// started.
type roundTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (r *roundTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// done runs the cleanups, last first, once.
func (r *roundTB) done() {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// idleCall makes the one call of a connection.
func idleCall(call func(args *Args, reply *Product) error) error {
	var reply Product
	if err := call(&Args{A: 6, B: 7}, &reply); err != nil {
		return err
	}
	if reply.P != 42 {
		return fmt.Errorf("Multiply(6, 7) = %d", reply.P)
	}
	return nil
}

func zerodialIdleClient(ctx context.Context, c *dispatch.Client, closeAlso func()) (func(), error) {
	err := idleCall(func(args *Args, reply *Product) error {
		return c.Call(ctx, zerodialMethods[multiply], args, reply)
	})
	done := func() {
		c.Close()
		if closeAlso != nil {
			closeAlso()
		}
	}
	if err != nil {
		done()
		return nil, err
	}
	return done, nil
}

func idleZerodialTCP(tb testing.TB, _ func(func())) func() (func(), error) {
	tr := tcp.New()
	addr := serveZerodial(tb, tr, "127.0.0.1:0", registerReflect)
	return func() (func(), error) {
		ctx := context.Background()
		c, err := dispatch.Dial(ctx, tr, addr)
		if err != nil {
			return nil, err
		}
		return zerodialIdleClient(ctx, c, nil)
	}
}

func idleZerodialMux(tb testing.TB, _ func(func())) func() (func(), error) {
	srvTr := mux.New()
	tb.Cleanup(func() { srvTr.Close() })
	addr := serveZerodial(tb, srvTr, "127.0.0.1:0", registerReflect)
	return func() (func(), error) {
		ctx := context.Background()
		tr := mux.New()
		c, err := dispatch.Dial(ctx, tr, addr)
		if err != nil {
			tr.Close()
			return nil, err
		}
		return zerodialIdleClient(ctx, c, func() { tr.Close() })
	}
}

func idleZerodialMuxStreams(tb testing.TB, client func(func())) func() (func(), error) {
	srvTr := mux.New(mux.WithStreamLimit(0))
	tb.Cleanup(func() { srvTr.Close() })
	addr := serveZerodial(tb, srvTr, "127.0.0.1:0", registerReflect)
	var tr *mux.Transport
	client(func() { tr = mux.New(mux.WithStreamLimit(0)) })
	tb.Cleanup(func() { tr.Close() })
	return func() (func(), error) {
		ctx := context.Background()
		c, err := dispatch.Dial(ctx, tr, addr)
		if err != nil {
			return nil, err
		}
		return zerodialIdleClient(ctx, c, nil)
	}
}

func rpcIdleClient(c *rpc.Client) (func(), error) {
	err := idleCall(func(args *Args, reply *Product) error {
		return c.Call(netrpcMethods[multiply], args, reply)
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return func() { c.Close() }, nil
}

func idleNetRPCTCP(tb testing.TB, _ func(func())) func() (func(), error) {
	srv := newRPCServer(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeConn(c) })
		}
	})
	// Registered first, run last: the clients are closed by then, which ends
	// every ServeConn.
	tb.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	addr := ln.Addr().String()
	return func() (func(), error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return rpcIdleClient(rpc.NewClient(c))
	}
}

// yamuxPair connects a yamux client session (made as the client end) to a
// server session over loopback TCP and runs accept on every stream the
// server accepts; the cleanup closes both sessions and waits for the
// accept loop and what it started.
func yamuxPair(tb testing.TB, client func(func()), wg *sync.WaitGroup, accept func(net.Conn)) *yamux.Session {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		s   *yamux.Session
		err error
	}
	got := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- res{nil, err}
			return
		}
		s, err := yamux.Server(c, yamuxConfig())
		got <- res{s, err}
	}()
	var cli *yamux.Session
	client(func() {
		c, derr := net.Dial("tcp", ln.Addr().String())
		if derr != nil {
			err = derr
			return
		}
		if cli, err = yamux.Client(c, yamuxConfig()); err != nil {
			c.Close()
		}
	})
	if err != nil {
		ln.Close()
		<-got
		tb.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		cli.Close()
		tb.Fatal(r.err)
	}
	srv := r.s
	wg.Go(func() {
		for {
			s, err := srv.AcceptStream()
			if err != nil {
				return
			}
			accept(s)
		}
	})
	tb.Cleanup(func() {
		cli.Close()
		srv.Close()
		wg.Wait()
	})
	return cli
}

func idleNetRPCYamuxStreams(tb testing.TB, client func(func())) func() (func(), error) {
	srv := newRPCServer(tb)
	var wg sync.WaitGroup
	cli := yamuxPair(tb, client, &wg, func(s net.Conn) {
		wg.Go(func() { srv.ServeConn(s) })
	})
	return func() (func(), error) {
		s, err := cli.OpenStream()
		if err != nil {
			return nil, err
		}
		return rpcIdleClient(rpc.NewClient(s))
	}
}

func idleGRPCTCP(tb testing.TB, _ func(func())) func() (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	serveGRPC(tb, ln)
	target := "passthrough:///" + ln.Addr().String()
	return func() (func(), error) {
		cc, err := grpc.NewClient(target,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.CallContentSubtype(grpcCodecName)))
		if err != nil {
			return nil, err
		}
		err = idleCall(func(args *Args, reply *Product) error {
			return cc.Invoke(context.Background(), grpcMethods[multiply], args, reply)
		})
		if err != nil {
			cc.Close()
			return nil, err
		}
		return func() { cc.Close() }, nil
	}
}

func idleYamuxStreams(tb testing.TB, client func(func())) func() (func(), error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted []net.Conn
		cond     = sync.NewCond(&mu)
	)
	cli := yamuxPair(tb, client, &wg, func(s net.Conn) {
		mu.Lock()
		accepted = append(accepted, s)
		cond.Broadcast()
		mu.Unlock()
	})
	opened := 0
	var openMu sync.Mutex
	return func() (func(), error) {
		s, err := cli.OpenStream()
		if err != nil {
			return nil, err
		}
		// A yamux stream is announced with its first frame: write a byte so
		// that the server accepts it, and wait until it has.
		if _, err := s.Write([]byte{1}); err != nil {
			s.Close()
			return nil, err
		}
		openMu.Lock()
		opened++
		want := opened
		openMu.Unlock()
		mu.Lock()
		for len(accepted) < want {
			cond.Wait()
		}
		mu.Unlock()
		return func() { s.Close() }, nil
	}
}

// TestIdle runs every row of BenchmarkIdle with a few connections, which
// checks that each opens, calls and closes, and leaves nothing behind.
func TestIdle(t *testing.T) {
	for _, name := range idleOrder {
		t.Run(name, func(t *testing.T) {
			row, ok := idleRows[name]
			if !ok {
				t.Fatalf("no idle row %s", name)
			}
			c := measureIdle(t, row, 20)
			if c.goroutines < 0 && name != "floor-yamux-streams" {
				t.Logf("%s: goroutines went down by %v", name, -c.goroutines)
			}
		})
	}
	if len(idleRows) != len(idleOrder) {
		t.Errorf("%d idle rows, %d in idleOrder", len(idleRows), len(idleOrder))
	}
}

// TestCountByLabel checks the parsing of the goroutine profile.
func TestCountByLabel(t *testing.T) {
	got := countByLabel(`goroutine profile: total 7
3 @ 0x1 0x2
# labels: {"idle-end":"server"}
#	0x1	main.f+0x1	f.go:1

2 @ 0x3
#	0x3	main.g+0x1	g.go:1

2 @ 0x4
# labels: {"idle-end":"client", "x":"y"}
#	0x4	main.h+0x1	h.go:1
`)
	if got["server"] != 3 || got["client"] != 2 || got[""] != 2 {
		t.Errorf("countByLabel = %v", got)
	}
}
