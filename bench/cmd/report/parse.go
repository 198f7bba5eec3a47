package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Set holds the samples of one `go test -bench` run: for each benchmark,
// one sample per -count, each sample its values by unit.
type Set struct {
	// Config holds the key: value lines go test prints before the results
	// (goos, goarch, pkg, cpu).
	Config map[string]string
	// Procs is the GOMAXPROCS suffix of the benchmark names (0 if none).
	Procs int
	// Names lists the benchmarks in the order they first appear, without
	// the "Benchmark" prefix and the GOMAXPROCS suffix:
	// "Unary/zerodial-mux/16B", "Parallel/netrpc-yamux".
	Names   []string
	samples map[string][]map[string]float64
}

var (
	configLine = regexp.MustCompile(`^([a-z]+): (.+)$`)
	procsRe    = regexp.MustCompile(`-(\d+)$`)
)

// Parse reads go test's benchmark output. Lines that are not results or
// configuration (PASS, ok, logs, failures) are skipped; a result line that
// does not parse is an error, since a silently dropped sample would bias a
// median.
func Parse(r io.Reader) (*Set, error) {
	s := &Set{Config: map[string]string{}, samples: map[string][]map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), " \t\r")
		if m := configLine.FindStringSubmatch(line); m != nil {
			s.Config[m[1]] = m[2]
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			// A name printed alone: its numbers follow logs on a later line,
			// which go test only does with -v. Not a result.
			continue
		}
		name, procs := splitName(strings.TrimPrefix(f[0], "Benchmark"))
		iters, err := strconv.Atoi(f[1])
		if err != nil {
			continue // a "BenchmarkX" word at the start of a log line
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: values and units do not pair up: %q", lineNo, line)
		}
		vals := map[string]float64{"iterations": float64(iters)}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q: %v", lineNo, f[i], err)
			}
			vals[f[i+1]] = v
		}
		if procs > 0 {
			s.Procs = procs
		}
		if _, seen := s.samples[name]; !seen {
			s.Names = append(s.Names, name)
		}
		s.samples[name] = append(s.samples[name], vals)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// splitName removes the -N GOMAXPROCS suffix go test appends to a name.
func splitName(full string) (string, int) {
	m := procsRe.FindStringSubmatchIndex(full)
	if m == nil {
		return full, 0
	}
	n, err := strconv.Atoi(full[m[2]:m[3]])
	if err != nil {
		return full, 0
	}
	return full[:m[0]], n
}

// Samples returns every sample of name in unit, in the order they ran.
func (s *Set) Samples(name, unit string) []float64 {
	var out []float64
	for _, v := range s.samples[name] {
		if x, ok := v[unit]; ok {
			out = append(out, x)
		}
	}
	return out
}

// Median returns the median of name's samples in unit, and false when there
// are none.
func (s *Set) Median(name, unit string) (float64, bool) {
	return median(s.Samples(name, unit))
}

func median(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	mid := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[mid], true
	}
	return (xs[mid-1] + xs[mid]) / 2, true
}
