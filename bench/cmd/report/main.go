// Command report runs the benchmarks of the bench module, takes the median
// of each measurement over -count runs, and writes docs/bench.md (machine,
// medians, ratios to peers and floors, targets judged with benchstat's
// confidence intervals: met, missed or unsure),
// docs/bench.svg (a bar chart of ns/op at 16B), docs/concurrency.svg
// (calls/s against concurrent callers) and docs/bench.txt (go test's raw
// output, for benchstat). BenchmarkIdle runs in a pass of its own, once per
// -count, with -idle-conns connections per row. Run it from the bench directory:
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
	idleConns := flag.Int("idle-conns", 10000, "connections per row of BenchmarkIdle, run apart with -benchtime 1x")
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
	} else {
		// Every benchmark but BenchmarkIdle, with -benchtime as given; then
		// BenchmarkIdle, whose op is a round of opening and closing
		// -idle-conns connections, once per -count (-benchtime 1x).
		args := []string{"test", "-run", "^$", "-bench", *bench, "-skip", "^BenchmarkIdle$", "-benchmem", "-count", strconv.Itoa(*count), "-timeout", timeout.String()}
		if *benchtime != "" {
			args = append(args, "-benchtime", *benchtime)
		}
		args = append(args, ".")
		command = "go " + strings.Join(args, " ")
		fmt.Fprintln(os.Stderr, command)
		if raw, err = runGo(ctx, dir, args, nil); err != nil {
			fail(err)
		}
		if pat, ok := idlePattern(*bench); ok {
			env := fmt.Sprintf("%s=%d", idleConnsEnv, *idleConns)
			args := []string{"test", "-run", "^$", "-bench", pat, "-benchmem", "-count", strconv.Itoa(*count), "-benchtime", "1x", "-timeout", timeout.String(), "."}
			idleCommand := env + " go " + strings.Join(args, " ")
			fmt.Fprintln(os.Stderr, idleCommand)
			more, err := runGo(ctx, dir, args, []string{env})
			if err != nil {
				fail(err)
			}
			raw = append(raw, more...)
			command += "; " + idleCommand
		}
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

// idleConnsEnv is the environment variable BenchmarkIdle takes its number
// of connections from.
const idleConnsEnv = "ZERODIAL_BENCH_IDLE_CONNS"

// idlePattern returns the -bench pattern of the BenchmarkIdle pass: the
// user's pattern with its first element (go test splits a pattern at
// slashes and matches each element against one level of names) replaced by
// ^BenchmarkIdle$, and false when that first element does not match
// BenchmarkIdle, so that the pass would run nothing.
func idlePattern(bench string) (string, bool) {
	first, rest, more := strings.Cut(bench, "/")
	re, err := regexp.Compile(first)
	if err != nil || !re.MatchString("BenchmarkIdle") {
		return "", false
	}
	if more {
		return "^BenchmarkIdle$/" + rest, true
	}
	return "^BenchmarkIdle$", true
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
