package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// impls lists the implementations in the order of the benchmarks, with the
// family the chart colours them by.
var impls = []struct{ name, family string }{
	{"zerodial-direct", "zerodial"},
	{"zerodial-direct-generic", "zerodial"},
	{"zerodial-copy", "zerodial"},
	{"zerodial-direct-deadline", "zerodial"},
	{"zerodial-direct-generic-deadline", "zerodial"},
	{"zerodial-copy-deadline", "zerodial"},
	{"zerodial-memory", "zerodial"},
	{"zerodial-tcp", "zerodial"},
	{"zerodial-mux", "zerodial"},
	{"zerodial-tcp-unix", "zerodial"},
	{"zerodial-mux-unix", "zerodial"},
	{"zerodial-copy-otel", "zerodial"},
	{"zerodial-memory-otel", "zerodial"},
	{"zerodial-mux-otel", "zerodial"},
	{"zerodial-gobrpc-tcp", "zerodial"},
	{"zerodial-jsonrpc-tcp", "zerodial"},
	{"zerodial-client-gobrpc-tcp", "zerodial"},
	{"zerodial-client-jsonrpc-tcp", "zerodial"},
	{"netrpc-pipe", "peer"},
	{"netrpc-tcp", "peer"},
	{"jsonrpc-tcp", "peer"},
	{"netrpc-yamux", "peer"},
	{"msgpackrpc-yamux", "peer"},
	{"grpc-tcp", "peer"},
	{"grpc-tcp-otel", "peer"},
	{"grpc-bufconn", "peer"},
	{"grpc-inproc", "peer"},
	{"zerodial-http-connect", "zerodial"},
	{"zerodial-http-grpc", "zerodial"},
	{"connect-native", "peer"},
	{"connect-native-grpc", "peer"},
	{"floor-reflect", "floor"},
	{"floor-chan", "floor"},
	{"floor-tcp", "floor"},
	{"floor-tcp-relay", "floor"},
	{"floor-unix", "floor"},
	{"floor-yamux", "floor"},
	{"zerodial-tcp-proc", "zerodial"},
	{"zerodial-tcp-unix-proc", "zerodial"},
	{"zerodial-mux-unix-proc", "zerodial"},
	{"zerodial-shm-proc", "zerodial"},
	{"netrpc-unix-proc", "peer"},
	{"grpc-unix-proc", "peer"},
	{"floor-tcp-proc", "floor"},
	{"floor-unix-proc", "floor"},
}

var sizes = []string{"16B", "1KiB", "64KiB", "1MiB"}

// paths pairs each zerodial path with the peer that does the same job and
// with the floor below it.
var paths = []struct{ impl, peer, floor string }{
	{"zerodial-direct", "grpc-inproc", "floor-reflect"},
	{"zerodial-direct-generic", "grpc-inproc", "floor-reflect"},
	{"zerodial-copy", "grpc-inproc", "floor-reflect"},
	{"zerodial-direct-deadline", "grpc-inproc", "floor-reflect"},
	{"zerodial-direct-generic-deadline", "grpc-inproc", "floor-reflect"},
	{"zerodial-copy-deadline", "grpc-inproc", "floor-reflect"},
	{"zerodial-memory", "netrpc-pipe", "floor-chan"},
	{"zerodial-tcp", "netrpc-tcp", "floor-tcp"},
	{"zerodial-mux", "netrpc-yamux", "floor-yamux"},
	{"zerodial-tcp-unix", "netrpc-tcp", "floor-unix"},
	{"zerodial-mux-unix", "netrpc-yamux", "floor-unix"},
	{"zerodial-tcp-proc", "netrpc-tcp", "floor-tcp-proc"},
	{"zerodial-tcp-unix-proc", "netrpc-unix-proc", "floor-unix-proc"},
	{"zerodial-mux-unix-proc", "netrpc-yamux", "floor-unix-proc"},
	{"zerodial-shm-proc", "netrpc-unix-proc", "floor-unix-proc"},
}

// migration pairs each row where one end of a net/rpc call has moved to
// dispatch with its twin, the same call with neither moved: a standard
// library client served by a dispatch.Server through Server.ServeCodec,
// beside the same client calling the standard library's server.
var migration = []struct{ row, twin string }{
	{"zerodial-gobrpc-tcp", "netrpc-tcp"},
	{"zerodial-jsonrpc-tcp", "jsonrpc-tcp"},
	// The other end moved: a dispatch Client (DialCodec) calling the
	// standard library's server, beside the same twins.
	{"zerodial-client-gobrpc-tcp", "netrpc-tcp"},
	{"zerodial-client-jsonrpc-tcp", "jsonrpc-tcp"},
}

// instrumented pairs each row run with OpenTelemetry on both ends (16B
// only) with the same row without it.
var instrumented = []struct{ plain, otel string }{
	{"zerodial-copy", "zerodial-copy-otel"},
	{"zerodial-memory", "zerodial-memory-otel"},
	{"zerodial-mux", "zerodial-mux-otel"},
	{"grpc-tcp", "grpc-tcp-otel"},
}

// streams lists the rows of BenchmarkStream in its order.
var streams = []string{
	"zerodial-direct",
	"zerodial-copy",
	"zerodial-memory",
	"zerodial-tcp",
	"zerodial-mux",
	"zerodial-tcp-unix-proc",
	"zerodial-shm-proc",
	"grpc-tcp",
	"grpc-bufconn",
	"grpc-inproc",
	"grpc-unix-proc",
	"drpc-tcp",
	"zerodial-http-connect",
	"zerodial-http-grpc",
	"connect-native",
	"connect-native-grpc",
	"floor-chan",
	"floor-iterpull",
	"floor-yamux",
}

// streamRefs are the rows the streams table divides every row's ns/op by:
// the peers and the floor the stream targets name.
var streamRefs = []string{"grpc-inproc", "grpc-bufconn", "grpc-tcp", "floor-iterpull", "floor-yamux"}

// replicas lists the rows of BenchmarkReplicas in its order.
var replicas = []string{
	"mux-one",
	"mux-1-replica",
	"mux-3-roundrobin",
	"mux-3-leastloaded",
	"grpc-3-roundrobin",
	"shortcut-one",
	"shortcut-local-first",
}

// replicaRefs are the rows the replicas table divides every row's ns/op by:
// the baselines of one address and gRPC's balancer, which the replica
// targets name.
var replicaRefs = []string{"mux-one", "grpc-3-roundrobin", "shortcut-one"}

// concurrencyImpls lists the rows of BenchmarkConcurrency in its order, and
// concurrencyCallers its points (callers sharing one client).
var (
	concurrencyImpls = []struct{ name, family string }{
		{"zerodial-copy", "zerodial"},
		{"zerodial-memory", "zerodial"},
		{"zerodial-tcp", "zerodial"},
		{"zerodial-mux", "zerodial"},
		{"netrpc-yamux", "peer"},
		{"msgpackrpc-yamux", "peer"},
		{"grpc-tcp", "peer"},
	}
	concurrencyCallers = []int{1, 4, 16, 64, 256, 1024}
)

// idles lists the rows of BenchmarkIdle in its order.
var idles = []string{
	"zerodial-tcp",
	"zerodial-mux",
	"zerodial-mux-streams",
	"netrpc-tcp",
	"netrpc-yamux-streams",
	"grpc-tcp",
	"floor-yamux-streams",
}

// idleRef is the row the idle table divides heap-B/conn by.
const idleRef = "grpc-tcp"

func unaryName(impl, size string) string { return "Unary/" + impl + "/" + size }
func concurrencyName(impl string, callers int) string {
	return fmt.Sprintf("Concurrency/%s/callers=%d", impl, callers)
}
func idleName(impl string) string     { return "Idle/" + impl }
func parallelName(impl string) string { return "Parallel/" + impl }
func streamName(impl string) string   { return "Stream/" + impl }
func replicaName(impl string) string  { return "Replicas/" + impl }

// Target is one goal: the median of Impl in Unit (at Size, in
// BenchmarkParallel when Size is "parallel", in BenchmarkStream when Size is
// "stream", in BenchmarkReplicas when Size is "replicas", in BenchmarkIdle
// when Size is "idle", in BenchmarkSlowLink at payload P when Size is
// "slowlink/P"), divided by Ref's median when Ref is set, compared
// with Limit by Op. Op "<=+" compares the difference instead: Impl's median
// minus Ref's, at most Limit.
type Target struct {
	Impl, Ref, Size, Unit string
	Op                    string // "<=", ">=" or "<=+"
	Limit                 float64
}

var targets = []Target{
	{"zerodial-direct-generic", "floor-reflect", "16B", "ns/op", "<=", 0.5},
	{"zerodial-direct-generic", "", "16B", "allocs/op", "<=", 1},
	{"zerodial-direct", "floor-reflect", "16B", "ns/op", "<=", 1.5},
	{"zerodial-copy", "netrpc-pipe", "16B", "ns/op", "<=", 0.35},
	{"zerodial-direct-deadline", "zerodial-copy-deadline", "16B", "ns/op", "<=", 0.5},
	// Speed, round three: what a deadline adds, against the same path
	// without one (it puts the handler on a server goroutine).
	{"zerodial-copy-deadline", "zerodial-copy", "16B", "ns/op", "<=", 1.5},
	{"zerodial-direct-generic-deadline", "zerodial-direct-generic", "16B", "ns/op", "<=", 4},
	// The network paths: the second round's targets (speed, round two)
	// where they replace the first's, memory's as round three restates it.
	{"zerodial-memory", "netrpc-pipe", "16B", "ns/op", "<=", 0.5},
	{"zerodial-tcp", "netrpc-tcp", "16B", "ns/op", "<=", 0.75},
	{"zerodial-tcp", "floor-tcp", "16B", "ns/op", "<=", 1.6},
	{"zerodial-mux", "netrpc-yamux", "16B", "ns/op", "<=", 0.8},
	{"zerodial-mux", "msgpackrpc-yamux", "16B", "ns/op", "<=", 0.8},
	// Speed, round three: the mux path against the floor it runs on, a
	// bare yamux stream; large messages against tcp's.
	{"zerodial-mux", "floor-yamux", "16B", "ns/op", "<=", 1.1},
	{"zerodial-mux", "netrpc-yamux", "1MiB", "ns/op", "<=", 0.8},
	{"zerodial-mux", "zerodial-tcp", "1MiB", "ns/op", "<=", 1.3},
	{"zerodial-mux", "zerodial-tcp", "1MiB", "allocs/op", "<=", 2},
	{"zerodial-mux", "", "16B", "allocs/op", "<=", 8},
	{"zerodial-mux", "netrpc-yamux", "parallel", "calls/s", ">=", 3},
	{"zerodial-tcp", "floor-tcp", "parallel", "calls/s", ">=", 1},
	{"zerodial-direct", "grpc-inproc", "stream", "ns/op", "<=", 0.5},
	{"zerodial-copy", "grpc-inproc", "stream", "ns/op", "<=", 0.5},
	{"zerodial-direct", "floor-iterpull", "stream", "ns/op", "<=", 2},
	{"zerodial-copy", "floor-iterpull", "stream", "ns/op", "<=", 2},
	{"zerodial-mux", "grpc-tcp", "stream", "ns/op", "<=", 0.5},
	{"zerodial-memory", "grpc-bufconn", "stream", "ns/op", "<=", 0.5},
	{"zerodial-direct", "", "stream", "allocs/msg", "<=", 0.01},
	{"zerodial-copy", "", "stream", "allocs/msg", "<=", 0.01},
	{"zerodial-memory", "", "stream", "allocs/msg", "<=", 2},
	{"zerodial-tcp", "", "stream", "allocs/msg", "<=", 2},
	{"zerodial-mux", "", "stream", "allocs/msg", "<=", 2},
	{"mux-3-roundrobin", "mux-one", "replicas", "ns/op", "<=", 1.05},
	{"mux-3-roundrobin", "grpc-3-roundrobin", "replicas", "ns/op", "<=", 0.5},
	{"shortcut-local-first", "shortcut-one", "replicas", "ns/op", "<=", 1.2},
	{"zerodial-tcp", "grpc-tcp", "idle", "heap-B/conn", "<=", 0.5},
	{"zerodial-mux", "grpc-tcp", "idle", "heap-B/conn", "<=", 0.5},
	{"zerodial-mux-streams", "grpc-tcp", "idle", "heap-B/conn", "<=", 0.5},
	{"zerodial-mux-streams", "floor-yamux-streams", "idle", "goroutines/conn", "<=+", 0.01},
	// Compression over a 100 Mbit/s link: text in a third of the time
	// it takes uncompressed, and no slower beyond noise where there is
	// nothing to gain (random bytes, a 16B call).
	{"zerodial-tcp", "zerodial-tcp-plain", slowLinkSize + "text-1MiB", "ns/op", "<=", 0.33},
	{"zerodial-mux", "zerodial-mux-plain", slowLinkSize + "text-1MiB", "ns/op", "<=", 0.33},
	{"zerodial-tcp", "zerodial-tcp-plain", slowLinkSize + "random-1MiB", "ns/op", "<=", 1.05},
	{"zerodial-mux", "zerodial-mux-plain", slowLinkSize + "random-1MiB", "ns/op", "<=", 1.05},
	{"zerodial-tcp", "zerodial-tcp-plain", slowLinkSize + "16B", "ns/op", "<=", 1.05},
	{"zerodial-mux", "zerodial-mux-plain", slowLinkSize + "16B", "ns/op", "<=", 1.05},
	// Between processes on one host (issue 36): tcp over a unix socket
	// near the raw round trip, in one process and between two.
	{"zerodial-tcp-unix", "floor-unix", "16B", "ns/op", "<=", 1.3},
	{"zerodial-tcp-unix-proc", "floor-unix-proc", "16B", "ns/op", "<=", 1.3},
}

// Retired is a target given up, kept in the report with the measurement
// that retired it: By's own median divided by the target's Ref's (its
// difference for "<=+"), the same comparison made of a floor the target's
// Impl runs on. When that floor alone misses the target, nothing built on
// it can meet it.
type Retired struct {
	Target
	By string
}

// retired are the targets given up. zerodial-mux runs over yamux, and a bare
// yamux stream's 16B round trip (floor-yamux) measured 61–82 µs against
// raw TCP's 19–26 µs and gRPC's over TCP in the same runs: these two asked
// more of the mux path than yamux itself gives. zerodial-mux ≤ 1.1×
// floor-yamux replaces them.
var retired = []Retired{
	{Target{"zerodial-mux", "floor-tcp", "16B", "ns/op", "<=", 2}, "floor-yamux"},
	{Target{"zerodial-mux", "grpc-tcp", "16B", "ns/op", "<=", 0.33}, "floor-yamux"},
}

func (t Target) bench(impl string) string {
	switch t.Size {
	case "parallel":
		return parallelName(impl)
	case "stream":
		return streamName(impl)
	case "replicas":
		return replicaName(impl)
	case "idle":
		return idleName(impl)
	}
	if pl, ok := slowLinkPayload(t.Size); ok {
		return slowLinkName(impl, pl)
	}
	return unaryName(impl, t.Size)
}

// String describes the target: "zerodial-mux ≤ 0.8× netrpc-yamux (16B ns/op)".
func (t Target) String() string {
	op := map[string]string{"<=": "≤", ">=": "≥", "<=+": "≤"}[t.Op]
	if t.Op == "<=+" {
		return fmt.Sprintf("%s %s %s %s + %s (%s)", t.Impl, t.Unit, op, t.Ref, fmtNum(t.Limit), t.Size)
	}
	if t.Ref == "" {
		return fmt.Sprintf("%s %s %s %s (%s)", t.Impl, t.Unit, op, fmtNum(t.Limit), t.Size)
	}
	return fmt.Sprintf("%s %s %s× %s (%s)", t.Impl, op, fmtNum(t.Limit), t.Ref, t.Size+" "+t.Unit)
}

// Outcome is a Target evaluated on a Set.
type Outcome struct {
	Target
	Value float64 // the ratio of medians, or the median itself when Ref is empty
	OK    bool    // there was data for both sides
	Met   bool    // Value meets the limit
	// Interval holds Value with the report's confidence (confidence.go),
	// and Verdict is what it says: a target reads met only when the whole
	// interval meets it.
	Interval Interval
	Verdict  Verdict
}

// Evaluate checks every target against s.
func Evaluate(s *Set) []Outcome {
	out := make([]Outcome, 0, len(targets))
	for _, t := range targets {
		out = append(out, evaluate(s, t))
	}
	return out
}

// evaluate checks one target against s.
func evaluate(s *Set, t Target) Outcome {
	o := Outcome{Target: t}
	impl := s.Samples(t.bench(t.Impl), t.Unit)
	v, ok := median(impl)
	iv := medianInterval(impl)
	if ok && t.Ref != "" {
		ref := s.Samples(t.bench(t.Ref), t.Unit)
		var r float64
		r, ok = median(ref)
		if t.Op == "<=+" {
			v -= r
			iv = diffInterval(iv, medianInterval(ref))
		} else {
			ok = ok && r > 0
			v /= r
			iv = ratioInterval(iv, medianInterval(ref))
		}
	}
	if !ok {
		return o
	}
	o.Value, o.OK, o.Interval = v, true, iv
	if t.Op != ">=" {
		o.Met = v <= t.Limit
	} else {
		o.Met = v >= t.Limit
	}
	o.Verdict = judge(iv, t.Op, t.Limit)
	return o
}

// RetiredOutcome is a retired target evaluated on a Set: the target's own
// figure, and By's against the same reference.
type RetiredOutcome struct {
	Retired
	Own, By Outcome
}

// EvaluateRetired evaluates the retired targets on s.
func EvaluateRetired(s *Set) []RetiredOutcome {
	var out []RetiredOutcome
	for _, r := range retired {
		by := r.Target
		by.Impl = r.By
		out = append(out, RetiredOutcome{r, evaluate(s, r.Target), evaluate(s, by)})
	}
	return out
}

// ratio returns median(a)/median(b) in unit, and false when either is
// missing.
func ratio(s *Set, a, b, unit string) (float64, bool) {
	x, ok1 := s.Median(a, unit)
	y, ok2 := s.Median(b, unit)
	if !ok1 || !ok2 || y == 0 {
		return 0, false
	}
	return x / y, true
}

// Machine describes where the numbers came from.
type Machine struct {
	CPU, GoVersion, Date, Command string
	Cores, Procs, Count           int
}

// WriteMarkdown writes the report.
func WriteMarkdown(w io.Writer, s *Set, m Machine) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# zerodial benchmarks\n\n")
	runs := "runs"
	if m.Count == 1 {
		runs = "run"
	}
	p("Generated by `go run ./cmd/report` in `bench/`; see [../README.md](../README.md) for what each row is\n")
	p("and how to read the ratios. Every number is the median of %d %s.\n\n![ns/op per implementation at 16B](bench.svg)\n\n", m.Count, runs)
	p("| machine | |\n| --- | --- |\n")
	p("| CPU | %s |\n| cores | %d (GOMAXPROCS %d) |\n| Go | %s |\n| date | %s |\n| command | `%s` |\n\n",
		m.CPU, m.Cores, m.Procs, m.GoVersion, m.Date, strings.ReplaceAll(m.Command, "|", `\|`)) // a | would end the cell, even in a code span

	p("## Targets\n\nEach target is judged on the interval that holds its figure with %d%% confidence ", int(2*confidence*100-100))
	p("(each median's %d%% interval as benchstat computes it, golang.org/x/perf/benchmath, assuming nothing ", int(confidence*100))
	p("about the distribution; a ratio's interval is the widest the two allow): met or missed only when the whole ")
	p("interval says so, otherwise unsure, with what the median alone says. A %d%% interval needs at least 6 runs.\n\n", int(confidence*100))
	p("| target | measured | interval | |\n| --- | ---: | ---: | --- |\n")
	for _, o := range Evaluate(s) {
		if !o.OK {
			p("| %s | no data | — | — |\n", o.Target)
			continue
		}
		p("| %s | %s | %s | %s |\n", o.Target, o.figure(), o.interval(), verdictWord(o))
	}
	p("\nRetired: targets given up, kept with the measurement that retired them — the same comparison made of the ")
	p("floor the row runs on, which no implementation over that floor can beat by much.\n\n")
	p("| retired target | measured | retired by | |\n| --- | ---: | --- | ---: |\n")
	for _, r := range EvaluateRetired(s) {
		own, by := "no data", "no data"
		if r.Own.OK {
			own = r.Own.figure()
		}
		if r.By.OK {
			by = r.By.figure()
		}
		p("| ~~%s~~ | %s | %s (%s) | %s |\n", r.Target, own, r.By.Impl, r.By.Target.Unit, by)
	}
	p("\n## Ratios\n\nns/op of each zerodial path divided by that of its natural peer and of its floor, ")
	p("at each size (below 1: zerodial is faster). Parallel: calls/s divided the same way (above 1: zerodial is faster).\n\n")
	p("| path | peer | %s | parallel | floor | %s |\n", strings.Join(sizes, " | "), strings.Join(sizes, " | "))
	p("| --- | --- |%s ---: | --- |%s\n", strings.Repeat(" ---: |", len(sizes)), strings.Repeat(" ---: |", len(sizes)))
	for _, pa := range paths {
		p("| %s | %s |", pa.impl, pa.peer)
		for _, sz := range sizes {
			p(" %s |", ratioCell(s, unaryName(pa.impl, sz), unaryName(pa.peer, sz), "ns/op"))
		}
		p(" %s | %s |", ratioCell(s, parallelName(pa.impl), parallelName(pa.peer), "calls/s"), pa.floor)
		for _, sz := range sizes {
			p(" %s |", ratioCell(s, unaryName(pa.impl, sz), unaryName(pa.floor, sz), "ns/op"))
		}
		p("\n")
	}

	writeMigration(p, s)
	writeHTTP(p, s)
	writeCPU(p, s)
	writeConcurrency(p, s)
	writeIdle(p, s)
	writeSlowLink(p, s)

	p("\n## Instrumentation: what OpenTelemetry adds to a 16B call\n\n")
	p("Each row with a span and a duration measurement on both ends and the trace context sent with the call ")
	p("(otelzerodial's interceptors; otelgrpc's stats handlers for gRPC), beside the same row without; ")
	p("the SDK samples every span and drops it when it ends (see ../README.md).\n\n")
	p("| row | ns/op | with OpenTelemetry | added | allocs/op | with OpenTelemetry | added |\n")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, in := range instrumented {
		plain, otel := unaryName(in.plain, "16B"), unaryName(in.otel, "16B")
		p("| %s | %s | %s | %s | %s | %s | %s |\n", in.plain,
			cell(s, plain, "ns/op"), cell(s, otel, "ns/op"), diffCell(s, otel, plain, "ns/op"),
			cell(s, plain, "allocs/op"), cell(s, otel, "allocs/op"), diffCell(s, otel, plain, "allocs/op"))
	}

	for _, sz := range sizes {
		p("\n## Unary, %s\n\n", sizeTitle(sz))
		p("| impl | ns/op | B/op | allocs/op | cpu-ns/op |\n| --- | ---: | ---: | ---: | ---: |\n")
		for _, im := range impls {
			name := unaryName(im.name, sz)
			p("| %s | %s | %s | %s | %s |\n", im.name, cell(s, name, "ns/op"), cell(s, name, "B/op"), cell(s, name, "allocs/op"), cell(s, name, "cpu-ns/op"))
		}
	}

	p("\n## Parallel: 16B from 64 goroutines sharing one client\n\n")
	p("| impl | calls/s | ns/op | B/op | allocs/op | cpu-ns/op |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, im := range impls {
		name := parallelName(im.name)
		p("| %s | %s | %s | %s | %s | %s |\n", im.name, cell(s, name, "calls/s"), cell(s, name, "ns/op"), cell(s, name, "B/op"), cell(s, name, "allocs/op"), cell(s, name, "cpu-ns/op"))
	}

	p("\n## Streams: 10,000 16B messages server→client\n\n")
	p("One server-streaming call per op; ns/msg and allocs/msg are per message (allocs/msg counts, as allocs/op does, ")
	p("what both ends allocate). The last columns divide ns/op by that of a peer or floor (below 1: faster).\n\n")
	refTable(p, s, streams, streamName, []string{"ns/op", "ns/msg", "allocs/msg", "B/op"}, streamRefs)
	p("\n## Replicas: 16B calls to a set of replicas\n\n")
	p("One 16B call at a time through a Client of three replicas (`dispatch.WithResolver`), beside a Client of one address ")
	p("and gRPC's round_robin over three backends (see ../README.md). The last columns divide ns/op by that of a ")
	p("baseline (below 1: faster).\n\n")
	refTable(p, s, replicas, replicaName, []string{"ns/op", "B/op", "allocs/op"}, replicaRefs)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMigration writes the migration table: each row where one end of a
// net/rpc call is dispatch, divided by its twin where neither is.
func writeMigration(p func(string, ...any), s *Set) {
	p("\n## Migration: net/rpc calls with one end moved to dispatch\n\n")
	p("Each row divided by its twin, the same call between the standard library's own client and server over the same ")
	p("loopback TCP: a standard library client (`rpc.Dial`, `jsonrpc.Dial`) served by a `dispatch.Server` through ")
	p("`Server.ServeCodec` (gobrpc's codec, jsonrpc's), beside the same client served by `rpc.Server`. ns/op at each size ")
	p("(below 1: faster than the twin), calls/s in Parallel (above 1: faster), and allocs/op at 16B of both ")
	p("(see ../README.md).\n\n")
	p("| row | twin | %s | parallel | 16B allocs/op | twin allocs/op |\n", strings.Join(sizes, " | "))
	p("| --- | --- |%s ---: | ---: | ---: |\n", strings.Repeat(" ---: |", len(sizes)))
	for _, m := range migration {
		p("| %s | %s |", m.row, m.twin)
		for _, sz := range sizes {
			p(" %s |", ratioCell(s, unaryName(m.row, sz), unaryName(m.twin, sz), "ns/op"))
		}
		p(" %s | %s | %s |\n", ratioCell(s, parallelName(m.row), parallelName(m.twin), "calls/s"),
			cell(s, unaryName(m.row, "16B"), "allocs/op"), cell(s, unaryName(m.twin, "16B"), "allocs/op"))
	}
}

// writeCPU writes the CPU-per-call table: each zerodial path's cpu-ns/op
// at 16B, one caller and 64, beside its peer's.
func writeCPU(p func(string, ...any), s *Set) {
	p("\n## CPU per call\n\n")
	p("User+system CPU time of the whole process (both ends, every goroutine, the GC) over the timed loop, per call ")
	p("(getrusage; `cpu-ns/op`), for each zerodial path beside its natural peer: one call at a time at 16B (`Unary`), and ")
	p("64 callers on one client (`Parallel`). *cores* is cpu-ns/op ÷ ns/op, how many cores a call keeps busy on average; ")
	p("the ratio columns divide cpu-ns/op (below 1: zerodial burns less CPU per call).\n\n")
	p("| path | peer | 16B cpu-ns/op | cores | peer cpu-ns/op | peer cores | ratio | parallel cpu-ns/op | peer | ratio |\n")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, pa := range paths {
		u, pu := unaryName(pa.impl, "16B"), unaryName(pa.peer, "16B")
		par, ppar := parallelName(pa.impl), parallelName(pa.peer)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", pa.impl, pa.peer,
			cell(s, u, "cpu-ns/op"), coresCell(s, u), cell(s, pu, "cpu-ns/op"), coresCell(s, pu),
			ratioCell(s, u, pu, "cpu-ns/op"),
			cell(s, par, "cpu-ns/op"), cell(s, ppar, "cpu-ns/op"), ratioCell(s, par, ppar, "cpu-ns/op"))
	}
}

// coresCell is median cpu-ns/op ÷ median ns/op of name, or "—".
func coresCell(s *Set, name string) string {
	c, ok1 := s.Median(name, "cpu-ns/op")
	w, ok2 := s.Median(name, "ns/op")
	if !ok1 || !ok2 || w <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", c/w)
}

// writeConcurrency writes the concurrency tables: calls/s, p50 / p99 and
// cpu-ns/op of every row at every number of callers.
func writeConcurrency(p func(string, ...any), s *Set) {
	p("\n## Concurrency: 16B calls/s against callers sharing one client\n\n")
	p("![calls/s against concurrent callers](concurrency.svg)\n\n")
	p("n goroutines share one client and make the run's calls between them (`BenchmarkConcurrency`). ")
	p("Latency is each call's own, from every call of the run (p50 / p99); cpu-ns/op is the process's CPU time per call.\n\n")
	head := func(title string) {
		p("%s\n\n| impl |", title)
		for _, n := range concurrencyCallers {
			p(" %d |", n)
		}
		p("\n| --- |%s\n", strings.Repeat(" ---: |", len(concurrencyCallers)))
	}
	head("calls/s:")
	for _, im := range concurrencyImpls {
		p("| %s |", im.name)
		for _, n := range concurrencyCallers {
			p(" %s |", cell(s, concurrencyName(im.name, n), "calls/s"))
		}
		p("\n")
	}
	p("\n")
	head("Latency, p50 / p99:")
	for _, im := range concurrencyImpls {
		p("| %s |", im.name)
		for _, n := range concurrencyCallers {
			name := concurrencyName(im.name, n)
			p50, ok1 := s.Median(name, "p50-ns")
			p99, ok2 := s.Median(name, "p99-ns")
			if !ok1 || !ok2 {
				p(" — |")
				continue
			}
			p(" %s / %s |", durationLabel(p50), durationLabel(p99))
		}
		p("\n")
	}
	p("\n")
	head("CPU per call, cpu-ns/op:")
	for _, im := range concurrencyImpls {
		p("| %s |", im.name)
		for _, n := range concurrencyCallers {
			p(" %s |", cell(s, concurrencyName(im.name, n), "cpu-ns/op"))
		}
		p("\n")
	}
}

// writeIdle writes the idle-cost table.
func writeIdle(p func(string, ...any), s *Set) {
	p("\n## Idle cost: what an open, idle connection holds\n\n")
	p("`BenchmarkIdle`: conns connections from clients of this process to one server of this process, one 16B call made on each, ")
	p("then left idle. Per connection: the live heap (after GC) and goroutine stacks they added, both ends together (one process; ")
	p("kernel buffers not counted), and the goroutines they added, in all and by the end that started them. ")
	p("`÷ %s` divides heap-B/conn (below 1: less heap than gRPC's).\n\n", idleRef)
	p("| impl | conns | heap-B/conn | stack-B/conn | heap+stack | goroutines/conn | client | server | ÷ %s |\n", idleRef)
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, im := range idles {
		name := idleName(im)
		total := "—"
		h, ok1 := s.Median(name, "heap-B/conn")
		st, ok2 := s.Median(name, "stack-B/conn")
		if ok1 && ok2 {
			total = fmtNum(h + st)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", im, cell(s, name, "conns"),
			cell(s, name, "heap-B/conn"), cell(s, name, "stack-B/conn"), total,
			cell(s, name, "goroutines/conn"), cell(s, name, "client-goroutines/conn"), cell(s, name, "server-goroutines/conn"),
			ratioCell(s, name, idleName(idleRef), "heap-B/conn"))
	}
}

// signed prints v with its sign.
func signed(v float64) string {
	if v >= 0 {
		return "+" + fmtNum(v)
	}
	return fmtNum(v)
}

func sizeTitle(sz string) string {
	if sz == "16B" {
		return "16B (Multiply of two int64)"
	}
	return sz + " (Echo of a []byte payload)"
}

// figure is the outcome's value as the targets table shows it.
func (o Outcome) figure() string {
	switch {
	case o.Ref == "":
		return fmtNum(o.Value)
	case o.Op == "<=+":
		return signed(o.Value)
	}
	return fmtRatio(o.Value) + "×"
}

// interval is the outcome's interval as the targets table shows it, "—"
// when unbounded.
func (o Outcome) interval() string {
	if !o.Interval.Bounded() {
		return "—"
	}
	switch {
	case o.Ref == "":
		return fmtNum(o.Interval.Lo) + " – " + fmtNum(o.Interval.Hi)
	case o.Op == "<=+":
		return signed(o.Interval.Lo) + " – " + signed(o.Interval.Hi)
	}
	return fmtRatio(o.Interval.Lo) + "× – " + fmtRatio(o.Interval.Hi) + "×"
}

// verdictWord says what the run says of the target: met or missed with the
// report's confidence, or unsure and what the median alone says.
func verdictWord(o Outcome) string {
	switch o.Verdict {
	case Met:
		return "met"
	case Missed:
		return "**missed**"
	}
	if o.Met {
		return "unsure (median: met)"
	}
	return "unsure (median: **missed**)"
}

func cell(s *Set, name, unit string) string {
	v, ok := s.Median(name, unit)
	if !ok {
		return "—"
	}
	return fmtNum(v)
}

// diffCell is median(a) - median(b) in unit, signed, or "—".
func diffCell(s *Set, a, b, unit string) string {
	x, ok1 := s.Median(a, unit)
	y, ok2 := s.Median(b, unit)
	if !ok1 || !ok2 {
		return "—"
	}
	if d := x - y; d >= 0 {
		return "+" + fmtNum(d)
	}
	return fmtNum(x - y)
}

func ratioCell(s *Set, a, b, unit string) string {
	r, ok := ratio(s, a, b, unit)
	if !ok {
		return "—"
	}
	return fmtRatio(r) + "×"
}

// fmtRatio prints a ratio: with two decimals from 0.1 to 10, as a whole
// number from 10 up, and with two significant digits below 0.1.
func fmtRatio(r float64) string {
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f", r)
	case r >= 0.1 || r <= 0:
		return fmt.Sprintf("%.2f", r)
	default:
		return fmt.Sprintf("%.*f", 1-int(math.Floor(math.Log10(r))), r)
	}
}

// fmtNum prints a measurement: integers with thousands separators from 100
// up, three significant digits below.
func fmtNum(v float64) string {
	if math.Abs(v) >= 100 || v == math.Trunc(v) {
		return group(int64(math.Round(v)))
	}
	return fmt.Sprintf("%.3g", v)
}

func group(n int64) string {
	if n < 0 {
		return "-" + group(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// refTable writes a table of rows with a column per metric, then a column
// per reference row dividing each row's ns/op by the reference's: the
// Streams and Replicas tables. nameOf gives a row's benchmark name.
func refTable(p func(string, ...any), s *Set, rows []string, nameOf func(string) string, metrics, refs []string) {
	p("| impl |")
	for _, m := range metrics {
		p(" %s |", m)
	}
	for _, r := range refs {
		p(" ÷ %s |", r)
	}
	p("\n|%s%s\n", " --- |", strings.Repeat(" ---: |", len(metrics)+len(refs)))
	for _, row := range rows {
		name := nameOf(row)
		p("| %s |", row)
		for _, m := range metrics {
			p(" %s |", cell(s, name, m))
		}
		for _, r := range refs {
			p(" %s |", ratioCell(s, name, nameOf(r), "ns/op"))
		}
		p("\n")
	}
}
