package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// canned is go test output in the shape the benchmarks print, with the
// lines around the results that the parser must skip.
const canned = `goos: linux
goarch: amd64
pkg: github.com/zerodial/transport/bench
cpu: AMD EPYC 7B13
BenchmarkUnary/zerodial-mux/16B-2         	   10000	     20000 ns/op	     300 B/op	       6 allocs/op
BenchmarkUnary/zerodial-mux/16B-2         	   10000	     24000 ns/op	     320 B/op	       6 allocs/op
BenchmarkUnary/zerodial-mux/16B-2         	   10000	     22000 ns/op	     310 B/op	       7 allocs/op
BenchmarkUnary/netrpc-yamux/16B-2         	    5000	     50000 ns/op	     678 B/op	      18 allocs/op
BenchmarkUnary/netrpc-yamux/16B-2         	    5000	     40000 ns/op	     678 B/op	      18 allocs/op
BenchmarkUnary/netrpc-yamux/1MiB-2        	     200	   6500281 ns/op	 161.31 MB/s	 8970448 B/op	     443 allocs/op
--- BENCH: BenchmarkUnary/netrpc-yamux/1MiB-2
    bench_test.go:99: a log line
BenchmarkParallel/zerodial-mux-2          	   20000	      9000 ns/op	    111111 calls/s	     300 B/op	       6 allocs/op
BenchmarkParallel/netrpc-yamux-2          	   10000	     26000 ns/op	     38481 calls/s	     673 B/op	      18 allocs/op
BenchmarkParallel/floor-tcp	   16320	     14280 ns/op	     70026 calls/s	       0 B/op	       0 allocs/op
PASS
ok  	github.com/zerodial/transport/bench	12.345s
`

func TestParse(t *testing.T) {
	s, err := Parse(strings.NewReader(canned))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Config["cpu"]; got != "AMD EPYC 7B13" {
		t.Errorf("cpu = %q", got)
	}
	if s.Procs != 2 {
		t.Errorf("Procs = %d, want 2", s.Procs)
	}
	want := []string{
		"Unary/zerodial-mux/16B", "Unary/netrpc-yamux/16B", "Unary/netrpc-yamux/1MiB",
		"Parallel/zerodial-mux", "Parallel/netrpc-yamux", "Parallel/floor-tcp",
	}
	if strings.Join(s.Names, " ") != strings.Join(want, " ") {
		t.Errorf("Names = %q, want %q", s.Names, want)
	}
	for _, c := range []struct {
		name, unit string
		want       float64
		n          int
	}{
		{"Unary/zerodial-mux/16B", "ns/op", 22000, 3}, // odd count: the middle one
		{"Unary/zerodial-mux/16B", "B/op", 310, 3},
		{"Unary/zerodial-mux/16B", "allocs/op", 6, 3},
		{"Unary/netrpc-yamux/16B", "ns/op", 45000, 2}, // even: the mean of the middle two
		{"Unary/netrpc-yamux/1MiB", "MB/s", 161.31, 1},
		{"Unary/netrpc-yamux/1MiB", "iterations", 200, 1},
		{"Parallel/zerodial-mux", "calls/s", 111111, 1},
		{"Parallel/floor-tcp", "ns/op", 14280, 1}, // no GOMAXPROCS suffix
	} {
		got, ok := s.Median(c.name, c.unit)
		if !ok || got != c.want {
			t.Errorf("Median(%s, %s) = %v, %v; want %v", c.name, c.unit, got, ok, c.want)
		}
		if n := len(s.Samples(c.name, c.unit)); n != c.n {
			t.Errorf("%s %s: %d samples, want %d", c.name, c.unit, n, c.n)
		}
	}
	if _, ok := s.Median("Unary/zerodial-tcp/16B", "ns/op"); ok {
		t.Error("Median of a benchmark that did not run reported a value")
	}
}

func TestParseMalformed(t *testing.T) {
	for _, in := range []string{
		"BenchmarkX-2 100 12 ns/op 5\n",
		"BenchmarkX-2 100 twelve ns/op\n",
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

func TestSplitName(t *testing.T) {
	for in, want := range map[string]string{
		"Unary/zerodial-direct-generic/16B-2": "Unary/zerodial-direct-generic/16B",
		"Parallel/floor-tcp-16":               "Parallel/floor-tcp",
		"Parallel/floor-tcp":                  "Parallel/floor-tcp",
	} {
		if got, _ := splitName(in); got != want {
			t.Errorf("splitName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	s, err := Parse(strings.NewReader(canned))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, o := range Evaluate(s) {
		got[o.Target.String()] = o
	}
	check := func(name string, ok, met bool, value float64) {
		t.Helper()
		o, found := got[name]
		if !found {
			t.Fatalf("no target %q among %v", name, got)
		}
		if o.OK != ok || o.Met != met || (ok && (o.Value < value-1e-9 || o.Value > value+1e-9)) {
			t.Errorf("%s: OK %v Met %v Value %v; want %v %v %v", name, o.OK, o.Met, o.Value, ok, met, value)
		}
	}
	check("zerodial-mux ≤ 0.8× netrpc-yamux (16B ns/op)", true, true, 22000.0/45000)
	check("zerodial-mux allocs/op ≤ 8 (16B)", true, true, 6)
	check("zerodial-mux ≥ 3× netrpc-yamux (parallel calls/s)", true, false, 111111.0/38481)
	check("zerodial-mux ≤ 1.1× floor-yamux (16B ns/op)", false, false, 0)
	check("zerodial-tcp ≤ 0.75× netrpc-tcp (16B ns/op)", false, false, 0)
	check("zerodial-tcp ≤ 1.6× floor-tcp (16B ns/op)", false, false, 0)
	check("zerodial-tcp ≥ 1× floor-tcp (parallel calls/s)", false, false, 0)
}

func TestWriteReport(t *testing.T) {
	s, err := Parse(strings.NewReader(canned))
	if err != nil {
		t.Fatal(err)
	}
	var md, svg bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{CPU: "test CPU", Cores: 2, Procs: 2, GoVersion: "go1.26", Date: "2026-01-02", Count: 3, Command: "go test -bench (Unary|Stream)"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| CPU | test CPU |",
		"| command | `go test -bench (Unary\\|Stream)` |",
		"| zerodial-mux ≤ 0.8× netrpc-yamux (16B ns/op) | 0.49× | — | unsure (median: met) |",
		"| zerodial-mux ≤ 1.1× floor-yamux (16B ns/op) | no data | — | — |",
		"| ~~zerodial-mux ≤ 0.33× grpc-tcp (16B ns/op)~~ | no data | floor-yamux (ns/op) | no data |",
		"| zerodial-mux | 22,000 | 310 | 6 |",
		"| zerodial-mux | netrpc-yamux | 0.49× |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
	if err := WriteSVG(&svg, s, "16B"); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	if !strings.HasPrefix(out, "<svg ") || !strings.HasSuffix(out, "</svg>\n") || !strings.Contains(out, "zerodial-mux: 22,000 ns/op") {
		t.Errorf("unexpected SVG:\n%s", out)
	}
}

// TestInstrumentation checks the table of what OpenTelemetry adds.
func TestInstrumentation(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkUnary/zerodial-mux/16B-2 	10000	 20000 ns/op	 300 B/op	 8 allocs/op
BenchmarkUnary/zerodial-mux-otel/16B-2 	10000	 23500 ns/op	 2300 B/op	 30 allocs/op
BenchmarkUnary/grpc-tcp-otel/16B-2 	10000	 150000 ns/op	 9000 B/op	 200 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| zerodial-mux | 20,000 | 23,500 | +3,500 | 8 | 30 | +22 |",
		"| grpc-tcp | — | 150,000 | — | — | 200 | — |",
		"| zerodial-mux-otel | 23,500 | 2,300 | 30 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 6: "6", 2.5: "2.5", 295.3: "295", 1234567: "1,234,567", 0.123: "0.123"} {
		if got := fmtNum(v); got != want {
			t.Errorf("fmtNum(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{850: "850 ns", 12345: "12.3 µs", 1e6: "1 ms", 2500: "2.50 µs"} {
		if got := durationLabel(v); got != want {
			t.Errorf("durationLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestFmtRatio(t *testing.T) {
	for v, want := range map[float64]string{0.49: "0.49", 0.2: "0.20", 0.056: "0.056", 0.0000578: "0.000058", 1.42: "1.42", 18.2: "18"} {
		if got := fmtRatio(v); got != want {
			t.Errorf("fmtRatio(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestStreams checks the stream targets and the streams table on canned
// BenchmarkStream output (one sample each).
func TestStreams(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkStream/zerodial-direct-2 	3114	 400000 ns/op	 0.0013 allocs/msg	 40.00 ns/msg	 728 B/op	 13 allocs/op
BenchmarkStream/zerodial-copy-2 	1042	 1100000 ns/op	 0.02 allocs/msg	 110.0 ns/msg	 777 B/op	 200 allocs/op
BenchmarkStream/zerodial-memory-2 	100	 12000000 ns/op	 0.9575 allocs/msg	 1200 ns/msg	 874610 B/op	 9575 allocs/op
BenchmarkStream/zerodial-mux-2 	10	 110000000 ns/op	 2.831 allocs/msg	 11000 ns/msg	 1199548 B/op	 28308 allocs/op
BenchmarkStream/grpc-tcp-2 	42	 27500000 ns/op	 10.24 allocs/msg	 2750 ns/msg	 3046518 B/op	 102384 allocs/op
BenchmarkStream/grpc-bufconn-2 	57	 24000000 ns/op	 10.19 allocs/msg	 2400 ns/msg	 3004376 B/op	 101937 allocs/op
BenchmarkStream/grpc-inproc-2 	61	 16000000 ns/op	 4.004 allocs/msg	 1600 ns/msg	 1362754 B/op	 40043 allocs/op
BenchmarkStream/floor-iterpull-2 	1152	 1000000 ns/op	 0.0008 allocs/msg	 100.0 ns/msg	 256 B/op	 8 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, o := range Evaluate(s) {
		got[o.Target.String()] = o
	}
	for _, c := range []struct {
		target  string
		ok, met bool
		value   float64
	}{
		{"zerodial-direct ≤ 0.5× grpc-inproc (stream ns/op)", true, true, 400000.0 / 16000000},
		{"zerodial-direct ≤ 2× floor-iterpull (stream ns/op)", true, true, 0.4},
		{"zerodial-copy ≤ 2× floor-iterpull (stream ns/op)", true, true, 1.1},
		{"zerodial-mux ≤ 0.5× grpc-tcp (stream ns/op)", true, false, 4},
		{"zerodial-memory ≤ 0.5× grpc-bufconn (stream ns/op)", true, true, 0.5},
		{"zerodial-direct allocs/msg ≤ 0.01 (stream)", true, true, 0.0013},
		{"zerodial-copy allocs/msg ≤ 0.01 (stream)", true, false, 0.02},
		{"zerodial-mux allocs/msg ≤ 2 (stream)", true, false, 2.831},
		{"zerodial-memory allocs/msg ≤ 2 (stream)", true, true, 0.9575},
		{"zerodial-tcp allocs/msg ≤ 2 (stream)", false, false, 0},
	} {
		o, found := got[c.target]
		if !found {
			t.Errorf("no target %q", c.target)
			continue
		}
		if o.OK != c.ok || o.Met != c.met || (c.ok && (o.Value < c.value-1e-9 || o.Value > c.value+1e-9)) {
			t.Errorf("%s: OK %v Met %v Value %v; want %v %v %v", c.target, o.OK, o.Met, o.Value, c.ok, c.met, c.value)
		}
	}
	if _, ok := got["zerodial-tcp ≤ 0.75× netrpc-tcp (16B ns/op)"]; !ok {
		t.Error("the unary targets are gone")
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Streams: 10,000 16B messages server→client",
		"| impl | ns/op | ns/msg | allocs/msg | B/op | ÷ grpc-inproc | ÷ grpc-bufconn | ÷ grpc-tcp | ÷ floor-iterpull | ÷ floor-yamux |",
		"| zerodial-direct | 400,000 | 40 | 0.0013 | 728 | 0.025× | 0.017× | 0.015× | 0.40× | — |",
		"| zerodial-memory | 12,000,000 | 1,200 | 0.958 | 874,610 | 0.75× | 0.50× | 0.44× | 12× | — |",
		"| zerodial-tcp | — | — | — | — | — | — | — | — | — |",
		"| zerodial-mux ≤ 0.5× grpc-tcp (stream ns/op) | 4.00× | — | unsure (median: **missed**) |",
		"| zerodial-direct allocs/msg ≤ 0.01 (stream) | 0.0013 | — | unsure (median: met) |",
		"| zerodial-tcp allocs/msg ≤ 2 (stream) | no data | — | — |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// TestReplicas checks the replica targets and the replicas table on canned
// BenchmarkReplicas output (one sample each).
func TestReplicas(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkReplicas/mux-one-2 	60000	 20000 ns/op	 300 B/op	 8 allocs/op
BenchmarkReplicas/mux-3-roundrobin-2 	60000	 20400 ns/op	 320 B/op	 9 allocs/op
BenchmarkReplicas/mux-3-leastloaded-2 	60000	 20600 ns/op	 320 B/op	 9 allocs/op
BenchmarkReplicas/grpc-3-roundrobin-2 	20000	 60000 ns/op	 9000 B/op	 170 allocs/op
BenchmarkReplicas/shortcut-one-2 	3000000	 400 ns/op	 112 B/op	 3 allocs/op
BenchmarkReplicas/shortcut-local-first-2 	3000000	 500 ns/op	 112 B/op	 3 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, o := range Evaluate(s) {
		got[o.Target.String()] = o
	}
	for _, c := range []struct {
		target string
		met    bool
		value  float64
	}{
		{"mux-3-roundrobin ≤ 1.05× mux-one (replicas ns/op)", true, 1.02},
		{"mux-3-roundrobin ≤ 0.5× grpc-3-roundrobin (replicas ns/op)", true, 0.34},
		{"shortcut-local-first ≤ 1.2× shortcut-one (replicas ns/op)", false, 1.25},
	} {
		o, found := got[c.target]
		if !found {
			t.Errorf("no target %q", c.target)
			continue
		}
		if !o.OK || o.Met != c.met || o.Value < c.value-1e-9 || o.Value > c.value+1e-9 {
			t.Errorf("%s: OK %v Met %v Value %v; want true %v %v", c.target, o.OK, o.Met, o.Value, c.met, c.value)
		}
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Replicas: 16B calls to a set of replicas",
		"| impl | ns/op | B/op | allocs/op | ÷ mux-one | ÷ grpc-3-roundrobin | ÷ shortcut-one |",
		"| mux-3-roundrobin | 20,400 | 320 | 9 | 1.02× | 0.34× | 51× |",
		"| shortcut-local-first | 500 | 112 | 3 | 0.025× | 0.0083× | 1.25× |",
		"| mux-3-roundrobin ≤ 1.05× mux-one (replicas ns/op) | 1.02× | — | unsure (median: met) |",
		"| shortcut-local-first ≤ 1.2× shortcut-one (replicas ns/op) | 1.25× | — | unsure (median: **missed**) |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// TestConcurrency checks the concurrency tables and chart on canned
// BenchmarkConcurrency output.
func TestConcurrency(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkConcurrency/zerodial-mux/callers=1-2 	2000	 76260 ns/op	 13113 calls/s	 86218 cpu-ns/op	 68238 p50-ns	 183444 p99-ns	 512 B/op	 8 allocs/op
BenchmarkConcurrency/zerodial-mux/callers=1-2 	2000	 70000 ns/op	 14000 calls/s	 80000 cpu-ns/op	 60000 p50-ns	 150000 p99-ns	 512 B/op	 8 allocs/op
BenchmarkConcurrency/zerodial-mux/callers=1024-2 	2000	 27098 ns/op	 36902 calls/s	 52519 cpu-ns/op	 17064959 p50-ns	 22141489 p99-ns	 1046 B/op	 13 allocs/op
BenchmarkConcurrency/grpc-tcp/callers=64-2 	2000	 116002 ns/op	 8621 calls/s	 107852 cpu-ns/op	 6125676 p50-ns	 19221322 p99-ns	 8737 B/op	 139 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Median("Concurrency/zerodial-mux/callers=1", "calls/s"); !ok || got != 13556.5 {
		t.Errorf("Median calls/s = %v, %v; want 13556.5", got, ok)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 2}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Concurrency: 16B calls/s against callers sharing one client",
		"| impl | 1 | 4 | 16 | 64 | 256 | 1024 |",
		"| zerodial-mux | 13,557 | — | — | — | — | 36,902 |",
		"| grpc-tcp | — | — | — | 8,621 | — | — |",
		"| zerodial-mux | 64.1 µs / 167 µs | — | — | — | — | 17.1 ms / 22.1 ms |",
		"| zerodial-mux | 83,109 | — | — | — | — | 52,519 |",
		"| zerodial-copy | — | — | — | — | — | — |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
	var svg bytes.Buffer
	if err := WriteConcurrencySVG(&svg, s); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	for _, want := range []string{
		"<svg ", "</svg>\n",
		"zerodial-mux, 1024 callers: 36,902 calls/s",
		"grpc-tcp, 64 callers: 8,621 calls/s",
		"zerodial-copy (no data)",
		"<polyline",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("concurrency SVG lacks %q:\n%s", want, out)
		}
	}
	// An empty set still draws a chart.
	svg.Reset()
	if err := WriteConcurrencySVG(&svg, &Set{}); err != nil || !strings.HasSuffix(svg.String(), "</svg>\n") {
		t.Errorf("empty chart: %v\n%s", err, svg.String())
	}
}

// TestIdle checks the idle targets and table on canned BenchmarkIdle
// output.
func TestIdle(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkIdle/zerodial-tcp-2 	1	 145258368 ns/op	 1.000 client-goroutines/conn	 10000 conns	 2.010 goroutines/conn	 40567 heap-B/conn	 1.010 server-goroutines/conn	 8028 stack-B/conn
BenchmarkIdle/zerodial-mux-streams-2 	1	 103940252 ns/op	 1.020 client-goroutines/conn	 10000 conns	 2.055 goroutines/conn	 10000 heap-B/conn	 1.035 server-goroutines/conn	 10486 stack-B/conn
BenchmarkIdle/grpc-tcp-2 	1	 234837181 ns/op	 5.000 client-goroutines/conn	 10000 conns	 8.000 goroutines/conn	 24000 heap-B/conn	 3.000 server-goroutines/conn	 28508 stack-B/conn
BenchmarkIdle/floor-yamux-streams-2 	1	 81165385 ns/op	 0 client-goroutines/conn	 10000 conns	 0.0006 goroutines/conn	 2838 heap-B/conn	 0 server-goroutines/conn	 163.8 stack-B/conn
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, o := range Evaluate(s) {
		got[o.Target.String()] = o
	}
	for _, c := range []struct {
		target  string
		ok, met bool
		value   float64
	}{
		{"zerodial-tcp ≤ 0.5× grpc-tcp (idle heap-B/conn)", true, false, 40567.0 / 24000},
		{"zerodial-mux-streams ≤ 0.5× grpc-tcp (idle heap-B/conn)", true, true, 10000.0 / 24000},
		{"zerodial-mux ≤ 0.5× grpc-tcp (idle heap-B/conn)", false, false, 0},
		{"zerodial-mux-streams goroutines/conn ≤ floor-yamux-streams + 0.01 (idle)", true, false, 2.055 - 0.0006},
	} {
		o, found := got[c.target]
		if !found {
			t.Errorf("no target %q", c.target)
			continue
		}
		if o.OK != c.ok || o.Met != c.met || (c.ok && (o.Value < c.value-1e-9 || o.Value > c.value+1e-9)) {
			t.Errorf("%s: OK %v Met %v Value %v; want %v %v %v", c.target, o.OK, o.Met, o.Value, c.ok, c.met, c.value)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Idle cost: what an open, idle connection holds",
		"| impl | conns | heap-B/conn | stack-B/conn | heap+stack | goroutines/conn | client | server | ÷ grpc-tcp |",
		"| zerodial-tcp | 10,000 | 40,567 | 8,028 | 48,595 | 2.01 | 1 | 1.01 | 1.69× |",
		"| floor-yamux-streams | 10,000 | 2,838 | 164 | 3,002 | 0.0006 | 0 | 0 | 0.12× |",
		"| netrpc-tcp | — | — | — | — | — | — | — | — |",
		"| zerodial-tcp ≤ 0.5× grpc-tcp (idle heap-B/conn) | 1.69× | — | unsure (median: **missed**) |",
		"| zerodial-mux-streams goroutines/conn ≤ floor-yamux-streams + 0.01 (idle) | +2.05 | — | unsure (median: **missed**) |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// TestCPU checks the cpu-ns/op columns and the CPU-per-call table.
func TestCPU(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkUnary/zerodial-mux/16B-2 	10000	 20000 ns/op	 300 B/op	 8 allocs/op	 30000 cpu-ns/op
BenchmarkUnary/netrpc-yamux/16B-2 	10000	 40000 ns/op	 678 B/op	 18 allocs/op	 50000 cpu-ns/op
BenchmarkParallel/zerodial-mux-2 	20000	 9000 ns/op	 111111 calls/s	 17000 cpu-ns/op	 300 B/op	 6 allocs/op
BenchmarkParallel/netrpc-yamux-2 	10000	 26000 ns/op	 38481 calls/s	 34000 cpu-ns/op	 673 B/op	 18 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## CPU per call",
		"| zerodial-mux | netrpc-yamux | 30,000 | 1.50 | 50,000 | 1.25 | 0.60× | 17,000 | 34,000 | 0.50× |",
		"| zerodial-tcp | netrpc-tcp | — | — | — | — | — | — | — | — |",
		"| zerodial-mux | 20,000 | 300 | 8 | 30,000 |",
		"| zerodial-mux | 111,111 | 9,000 | 300 | 6 | 17,000 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// TestMigration checks the migration table: each ServeCodec row divided by
// its twin, a size neither ran shown as "—".
func TestMigration(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkUnary/zerodial-gobrpc-tcp/16B-2 	10000	 30000 ns/op	 400 B/op	 12 allocs/op
BenchmarkUnary/netrpc-tcp/16B-2 	10000	 40000 ns/op	 500 B/op	 15 allocs/op
BenchmarkUnary/zerodial-gobrpc-tcp/1MiB-2 	100	 2200000 ns/op	 2000000 B/op	 40 allocs/op
BenchmarkUnary/netrpc-tcp/1MiB-2 	100	 2000000 ns/op	 2000000 B/op	 30 allocs/op
BenchmarkParallel/zerodial-gobrpc-tcp-2 	20000	 9000 ns/op	 150000 calls/s	 300 B/op	 6 allocs/op
BenchmarkParallel/netrpc-tcp-2 	10000	 26000 ns/op	 50000 calls/s	 673 B/op	 18 allocs/op
BenchmarkUnary/zerodial-jsonrpc-tcp/16B-2 	10000	 45000 ns/op	 900 B/op	 25 allocs/op
BenchmarkUnary/jsonrpc-tcp/16B-2 	10000	 50000 ns/op	 1000 B/op	 30 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Migration: net/rpc calls with one end moved to dispatch",
		"| zerodial-gobrpc-tcp | netrpc-tcp | 0.75× | — | — | 1.10× | 3.00× | 12 | 15 |",
		"| zerodial-jsonrpc-tcp | jsonrpc-tcp | 0.90× | — | — | — | — | 25 | 30 |",
		"| zerodial-gobrpc-tcp | 30,000 | 400 | 12 |",
		"| jsonrpc-tcp | 50,000 | 1,000 | 30 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

func TestPassPattern(t *testing.T) {
	for in, want := range map[string]string{
		".":                "^BenchmarkIdle$",
		"Idle":             "^BenchmarkIdle$",
		"Idle/zerodial":    "^BenchmarkIdle$/zerodial",
		"Unary/.*/16B":     "",
		"Stream":           "",
		"(Unary|Idle)/tcp": "^BenchmarkIdle$/tcp",
	} {
		got, ok := passPattern(in, "BenchmarkIdle")
		if ok != (want != "") || got != want {
			t.Errorf("passPattern(%q, BenchmarkIdle) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestShortPattern(t *testing.T) {
	all := "^BenchmarkUnary$/^(zerodial-direct|zerodial-direct-generic|zerodial-copy|zerodial-direct-deadline|zerodial-direct-generic-deadline|zerodial-copy-deadline|floor-reflect|floor-chan)$"
	for in, want := range map[string]string{
		".":                           all,
		"Unary":                       all,
		"Unary/.*/16B":                all + "/16B",
		"Unary/zerodial-mux":          "",
		"Unary/^zerodial-direct$/16B": "^BenchmarkUnary$/^(zerodial-direct)$/16B",
		"Unary/floor":                 "^BenchmarkUnary$/^(floor-reflect|floor-chan)$",
		"Stream":                      "",
		"SlowLink":                    "",
	} {
		got, ok := shortPattern(in)
		if ok != (want != "") || got != want {
			t.Errorf("shortPattern(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestPlan checks the go test commands of a full run: every benchmark once,
// in the pass that suits it.
func TestPlan(t *testing.T) {
	got := plan(runOptions{bench: ".", count: 6, idleConns: 10000, timeout: 80 * time.Minute, shortBenchtime: "2s", slowBenchtime: "2s"})
	want := []string{
		"go test -run ^$ -bench . -benchmem -count 6 -timeout 1h20m0s -skip ^Benchmark(Idle|SlowLink|Unary)$ .",
		"go test -run ^$ -bench ^BenchmarkUnary$ -benchmem -count 6 -timeout 1h20m0s -skip ^BenchmarkUnary$/^(zerodial-direct|zerodial-direct-generic|zerodial-copy|zerodial-direct-deadline|zerodial-direct-generic-deadline|zerodial-copy-deadline|floor-reflect|floor-chan)$ .",
		"go test -run ^$ -bench ^BenchmarkUnary$/^(zerodial-direct|zerodial-direct-generic|zerodial-copy|zerodial-direct-deadline|zerodial-direct-generic-deadline|zerodial-copy-deadline|floor-reflect|floor-chan)$ -benchmem -count 1 -timeout 1h20m0s -benchtime 2s . (6×)",
		"go test -run ^$ -bench ^BenchmarkSlowLink$ -benchmem -count 1 -timeout 1h20m0s -benchtime 2s . (6×)",
		"ZERODIAL_BENCH_IDLE_CONNS=10000 go test -run ^$ -bench ^BenchmarkIdle$ -benchmem -count 6 -timeout 1h20m0s -benchtime 1x .",
	}
	var gotS []string
	for _, p := range got {
		gotS = append(gotS, p.String())
	}
	if !slices.Equal(gotS, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(gotS, "\n"), strings.Join(want, "\n"))
	}

	// A subset keeps to what it selects, and -benchtime reaches the
	// passes that run -count samples each.
	got = plan(runOptions{bench: "Unary/zerodial-mux/16B", count: 3, timeout: time.Hour, benchtime: "100ms", shortBenchtime: "2s", slowBenchtime: "2s"})
	gotS = nil
	for _, p := range got {
		gotS = append(gotS, p.String())
	}
	want = []string{
		"go test -run ^$ -bench Unary/zerodial-mux/16B -benchmem -count 3 -timeout 1h0m0s -benchtime 100ms -skip ^Benchmark(Idle|SlowLink|Unary)$ .",
		"go test -run ^$ -bench ^BenchmarkUnary$/zerodial-mux/16B -benchmem -count 3 -timeout 1h0m0s -benchtime 100ms -skip ^BenchmarkUnary$/^(zerodial-direct|zerodial-direct-generic|zerodial-copy|zerodial-direct-deadline|zerodial-direct-generic-deadline|zerodial-copy-deadline|floor-reflect|floor-chan)$ .",
	}
	if !slices.Equal(gotS, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(gotS, "\n"), strings.Join(want, "\n"))
	}
}

// TestShortRowsKnown: every row of shortRows is a row of the report.
func TestShortRowsKnown(t *testing.T) {
	for _, r := range shortRows {
		if !slices.ContainsFunc(impls, func(im struct{ name, family string }) bool { return im.name == r }) {
			t.Errorf("shortRows has %s, which impls lacks", r)
		}
	}
}

func TestRateLabel(t *testing.T) {
	for v, want := range map[float64]string{500: "500", 20000: "20k", 1500000: "1.5M", 2000: "2k"} {
		if got := rateLabel(v); got != want {
			t.Errorf("rateLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestDefaultIdleConns: BenchmarkIdle's rows of 2 descriptors a
// connection fit the open-file limit, with 256 to spare.
func TestDefaultIdleConns(t *testing.T) {
	for limit, want := range map[uint64]int{0: 10000, 1 << 20: 10000, 20256: 10000, 20000: 9500, 4096: 1500, 1024: 500} {
		if got := defaultIdleConns(limit); got != want {
			t.Errorf("defaultIdleConns(%d) = %d, want %d", limit, got, want)
		}
	}
}
