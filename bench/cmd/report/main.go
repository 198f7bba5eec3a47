// Command report runs the benchmarks of the bench module, takes the median
// of each measurement over -count runs, and writes docs/bench.md (machine,
// medians, ratios to peers and floors, targets judged with benchstat's
// confidence intervals: met, missed or unsure),
// docs/bench.svg (a bar chart of ns/op at 16B), docs/concurrency.svg
// (calls/s against concurrent callers) and docs/bench.txt (go test's raw
// output, for benchstat). Some benchmarks run in passes of their own (see
// plan): the in-process Unary rows and BenchmarkSlowLink one sample per go
// test, -count times; BenchmarkIdle once per -count, with -idle-conns
// connections per row. Run it from the bench directory:
//
//	go run ./cmd/report                 # -count 6, go test's default -benchtime
//	go run ./cmd/report -count 10 -benchtime 2s
//	go run ./cmd/report -in old.txt     # report on saved output, run nothing
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	// 6: the fewest runs for which a median has a 95% confidence interval
	// (the targets are judged on it).
	count := flag.Int("count", 6, "runs of each benchmark; the report shows medians, and judges targets on their confidence intervals (6 runs at least)")
	benchtime := flag.String("benchtime", "", "go test -benchtime for each run (default: go test's, 1s)")
	bench := flag.String("bench", ".", "go test -bench pattern")
	timeout := flag.Duration("timeout", 80*time.Minute, "go test -timeout for the whole run")
	in := flag.String("in", "", "parse this saved go test output instead of running the benchmarks")
	out := flag.String("out", "", "directory for bench.md, bench.svg, concurrency.svg and bench.txt (default: the bench module's docs)")
	idleConns := flag.Int("idle-conns", 0, "connections per row of BenchmarkIdle, run apart with -benchtime 1x (default: 10,000, or as many as the open-file limit allows, 2 descriptors each)")
	shortBenchtime := flag.String("short-benchtime", "2s", "go test -benchtime of the in-process Unary rows (shortRows), run apart one sample per go test, -count times")
	slowBenchtime := flag.String("slowlink-benchtime", "2s", "go test -benchtime of BenchmarkSlowLink, run apart one sample per go test, -count times")
	flag.Parse()
	if *count < 1 {
		fail(errors.New("-count must be at least 1"))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	dir, err := moduleDir(ctx)
	if err != nil {
		fail(err)
	}
	if *out == "" {
		*out = filepath.Join(dir, "docs")
	}

	var raw []byte
	var command string
	if *in != "" {
		if raw, err = os.ReadFile(*in); err != nil {
			fail(err)
		}
		command = "(saved output " + filepath.Base(*in) + ")"
		// A report's own bench.txt says what produced it.
		if line, _, _ := bytes.Cut(raw, []byte("\n")); bytes.HasPrefix(line, []byte("command: ")) {
			command = string(bytes.TrimPrefix(line, []byte("command: ")))
		}
	} else {
		if *idleConns == 0 {
			*idleConns = defaultIdleConns(fdLimit())
		}
		var commands []string
		for _, ps := range plan(runOptions{
			bench: *bench, count: *count, timeout: *timeout, idleConns: *idleConns,
			benchtime: *benchtime, shortBenchtime: *shortBenchtime, slowBenchtime: *slowBenchtime,
		}) {
			fmt.Fprintln(os.Stderr, ps)
			for range ps.rounds {
				more, err := runGo(ctx, dir, ps.args, ps.env)
				if err != nil {
					fail(err)
				}
				raw = append(raw, more...)
			}
			commands = append(commands, ps.String())
		}
		command = strings.Join(commands, "; ")
		// Configuration lines, which benchstat reads as such, so that a
		// report redone with -in says what was run and when.
		head := fmt.Sprintf("command: %s\ndate: %s\n", command, time.Now().UTC().Format("2006-01-02"))
		raw = append([]byte(head), raw...)
	}

	set, err := Parse(bytes.NewReader(raw))
	if err != nil {
		fail(err)
	}
	if len(set.Names) == 0 {
		fail(errors.New("no benchmark results in the output"))
	}
	m := Machine{
		CPU:       cpuModel(set.Config["cpu"]),
		Cores:     runtime.NumCPU(),
		Procs:     set.Procs,
		GoVersion: goVersion(ctx),
		Date:      cmp.Or(set.Config["date"], time.Now().UTC().Format("2006-01-02")),
		Command:   cmp.Or(set.Config["command"], command),
		Count:     countOf(set),
	}

	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	var md, svg, csvg bytes.Buffer
	if err := WriteMarkdown(&md, set, m); err != nil {
		fail(err)
	}
	if err := WriteSVG(&svg, set, "16B"); err != nil {
		fail(err)
	}
	if err := WriteConcurrencySVG(&csvg, set); err != nil {
		fail(err)
	}
	for name, data := range map[string][]byte{"bench.md": md.Bytes(), "bench.svg": svg.Bytes(), "concurrency.svg": csvg.Bytes(), "bench.txt": raw} {
		if *in != "" && name == "bench.txt" {
			continue
		}
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			fail(err)
		}
	}
	for _, o := range Evaluate(set) {
		status := "no data"
		if o.OK {
			status = verdictWord(o)
		}
		fmt.Fprintf(os.Stderr, "%-60s %s\n", o.Target, strings.ReplaceAll(status, "**", ""))
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", filepath.Join(*out, "bench.md"))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "report:", err)
	os.Exit(1)
}

// benchModule is the module whose benchmarks the report runs.
const benchModule = "github.com/zerodial/transport/bench"

// moduleDir returns the root of the bench module, which the working
// directory must be in.
func moduleDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w (run this from the bench directory)", err)
	}
	path, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if path != benchModule {
		return "", fmt.Errorf("the current module is %q, not %s: run this from the bench directory", path, benchModule)
	}
	return dir, nil
}

// defaultIdleConns is BenchmarkIdle's connections per row when -idle-conns
// is not given: 10,000, or fewer, in steps of 500, when the open-file
// limit cannot hold 2 descriptors for each and 256 to spare (BenchmarkIdle
// skips a row that does not fit; a machine that allows 20,000 files gets
// 9,500). limit is 0 when it is not known.
func defaultIdleConns(limit uint64) int {
	const most = 10000
	if limit == 0 || limit >= 2*most+256 {
		return most
	}
	if limit < 2*500+256 {
		return 500
	}
	return int((limit-256)/2/500) * 500
}

// idleConnsEnv is the environment variable BenchmarkIdle takes its number
// of connections from.
const idleConnsEnv = "ZERODIAL_BENCH_IDLE_CONNS"

// runOptions are what plan needs of the command line.
type runOptions struct {
	bench                                    string
	count, idleConns                         int
	timeout                                  time.Duration
	benchtime, shortBenchtime, slowBenchtime string
}

// pass is one go test command of a report's run, made rounds times.
type pass struct {
	args   []string // after "go"
	env    []string // added to the environment
	rounds int
}

// String is the pass as a shell would run it, with "(N×)" when it is run
// more than once.
func (p pass) String() string {
	s := strings.Join(append(slices.Clone(p.env), "go "+strings.Join(p.args, " ")), " ")
	if p.rounds > 1 {
		s += fmt.Sprintf(" (%d×)", p.rounds)
	}
	return s
}

// shortRows are the BenchmarkUnary rows whose call stays in the process and
// takes from a few hundred ns to a few µs: the shortcut paths and the floors
// under them, which the targets divide by one another. Their ns/op moved by
// ±40% between reports; on the shared 2-core machine, one row's samples
// ranged over 2.4× in ns/op while its cpu-ns/op stayed within 10%, each
// sample a million iterations or more: the time lost was the machine's,
// other processes taking the cores for part of a second. go test -count repeats each row back to back, so one row's
// samples all fell in the same few seconds, its reference's minutes away:
// a burst of load moved the whole row, and its interval stayed narrow.
// They run apart, one sample of every row per go test, -count times, so
// that each round measures a row and its reference seconds apart and the
// samples of a row are spread over the pass, each over -short-benchtime.
var shortRows = []string{
	"zerodial-direct",
	"zerodial-direct-generic",
	"zerodial-copy",
	"zerodial-direct-deadline",
	"zerodial-direct-generic-deadline",
	"zerodial-copy-deadline",
	"floor-reflect",
	"floor-chan",
}

// plan returns the go test commands of a report's run:
//
//   - every benchmark but those the next passes run, with -benchtime as
//     given, -count times each;
//   - BenchmarkUnary's rows but shortRows, the same way (a pass of its
//     own only because go test takes one -skip pattern);
//   - shortRows, -count rounds of one sample each, with -short-benchtime;
//   - BenchmarkSlowLink, -count rounds of one sample each, with
//     -slowlink-benchtime: an op is one call through a 100 Mbit/s proxy,
//     from under a ms (16B) to about 200 ms (an incompressible MiB), so a
//     time bound gives every row a sample of the same length where a fixed
//     count (-benchtime Nx) would make 16B's a few ms, all timer and
//     scheduler noise, or the MiB rows' minutes long; rounds measure a row
//     and its -plain twin seconds apart;
//   - BenchmarkIdle, whose op is a round of opening and closing
//     -idle-conns connections, once per -count (-benchtime 1x).
//
// Each pass keeps the -bench pattern's selection; a pass that would
// select nothing is left out.
func plan(o runOptions) []pass {
	base := func(pattern string, count int) []string {
		args := []string{"test", "-run", "^$", "-bench", pattern}
		return append(args, "-benchmem", "-count", strconv.Itoa(count), "-timeout", o.timeout.String())
	}
	with := func(args []string, benchtime string, more ...string) []string {
		if benchtime != "" {
			args = append(args, "-benchtime", benchtime)
		}
		return append(append(args, more...), ".")
	}
	var out []pass
	out = append(out, pass{args: with(base(o.bench, o.count), o.benchtime, "-skip", "^Benchmark(Idle|SlowLink|Unary)$"), rounds: 1})
	if pat, ok := passPattern(o.bench, "BenchmarkUnary"); ok {
		out = append(out, pass{args: with(base(pat, o.count), o.benchtime, "-skip", "^BenchmarkUnary$/^("+strings.Join(shortRows, "|")+")$"), rounds: 1})
	}
	if pat, ok := shortPattern(o.bench); ok {
		out = append(out, pass{args: with(base(pat, 1), o.shortBenchtime), rounds: o.count})
	}
	if pat, ok := passPattern(o.bench, "BenchmarkSlowLink"); ok {
		out = append(out, pass{args: with(base(pat, 1), o.slowBenchtime), rounds: o.count})
	}
	if pat, ok := passPattern(o.bench, "BenchmarkIdle"); ok {
		out = append(out, pass{args: with(base(pat, o.count), "1x"), env: []string{fmt.Sprintf("%s=%d", idleConnsEnv, o.idleConns)}, rounds: 1})
	}
	return out
}

// passPattern returns the -bench pattern of a pass of the benchmark top
// alone: the user's pattern with its first element (go test splits a
// pattern at slashes and matches each element against one level of names)
// replaced by ^top$, and false when that first element does not match top,
// so that the pass would run nothing.
func passPattern(bench, top string) (string, bool) {
	first, rest, more := strings.Cut(bench, "/")
	re, err := regexp.Compile(first)
	if err != nil || !re.MatchString(top) {
		return "", false
	}
	if more {
		return "^" + top + "$/" + rest, true
	}
	return "^" + top + "$", true
}

// shortPattern returns the -bench pattern of the shortRows pass: those of
// shortRows the user's pattern selects in BenchmarkUnary, by name, and the
// rest of the pattern (the sizes); false when it selects none.
func shortPattern(bench string) (string, bool) {
	pat, ok := passPattern(bench, "BenchmarkUnary")
	if !ok {
		return "", false
	}
	_, rest, _ := strings.Cut(pat, "/")
	second, sizes, more := strings.Cut(rest, "/")
	re, err := regexp.Compile(second)
	if err != nil {
		return "", false
	}
	var rows []string
	for _, r := range shortRows {
		if re.MatchString(r) {
			rows = append(rows, regexp.QuoteMeta(r))
		}
	}
	if len(rows) == 0 {
		return "", false
	}
	pat = "^BenchmarkUnary$/^(" + strings.Join(rows, "|") + ")$"
	if more {
		pat += "/" + sizes
	}
	return pat, true
}

// runGo runs the go command in dir, with env added to the environment,
// copying its output to standard error as it comes, and returns its
// standard output.
func runGo(ctx context.Context, dir string, args, env []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stderr = os.Stderr
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	var buf bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			buf.Write(sc.Bytes())
			buf.WriteByte('\n')
			fmt.Fprintln(os.Stderr, sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-copied
	if err != nil {
		return buf.Bytes(), fmt.Errorf("go test: %w", err)
	}
	return buf.Bytes(), nil
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or go test's
// own cpu line where there is none.
func cpuModel(fallback string) string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for line := range strings.Lines(string(data)) {
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	if fallback == "" {
		return "unknown"
	}
	return fallback
}

// goVersion is the version of the go command that ran the benchmarks.
func goVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return runtime.Version()
}

// countOf is the number of samples the benchmarks have (the largest, should
// a run have been cut short).
func countOf(s *Set) int {
	n := 0
	for _, name := range s.Names {
		n = max(n, len(s.Samples(name, "ns/op")))
	}
	return n
}
