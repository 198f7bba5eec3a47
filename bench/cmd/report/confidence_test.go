package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestJudge: a target is met or missed only when the whole interval is on
// one side of the limit.
func TestJudge(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		iv    Interval
		op    string
		limit float64
		want  Verdict
	}{
		{Interval{0.9, 1.05}, "<=", 1.1, Met},
		{Interval{0.9, 1.2}, "<=", 1.1, Unsure},
		{Interval{1.15, 1.2}, "<=", 1.1, Missed},
		{Interval{-inf, inf}, "<=", 1.1, Unsure},
		{Interval{1.6, 2}, ">=", 1.5, Met},
		{Interval{1.4, 2}, ">=", 1.5, Unsure},
		{Interval{1, 1.4}, ">=", 1.5, Missed},
		{Interval{-0.5, 0.005}, "<=+", 0.01, Met},
		{Interval{0.02, 0.03}, "<=+", 0.01, Missed},
	} {
		if got := judge(c.iv, c.op, c.limit); got != c.want {
			t.Errorf("judge(%v, %s, %v) = %v, want %v", c.iv, c.op, c.limit, got, c.want)
		}
	}
}

// TestMedianInterval: with 6 or more samples the interval is bounded and
// holds the median; with 5 it is not (a 95% interval of the median needs 6).
func TestMedianInterval(t *testing.T) {
	iv := medianInterval([]float64{5, 1, 4, 2, 3, 6})
	if !iv.Bounded() || iv.Lo > 3 || iv.Hi < 4 || iv.Lo < 1 || iv.Hi > 6 {
		t.Errorf("interval of 1..6 = %v", iv)
	}
	if iv := medianInterval([]float64{1, 2, 3, 4, 5}); iv.Bounded() {
		t.Errorf("interval of 5 samples = %v, want unbounded", iv)
	}
	r := ratioInterval(Interval{2, 4}, Interval{1, 2})
	if r != (Interval{1, 4}) {
		t.Errorf("ratio interval = %v, want {1 4}", r)
	}
	if d := diffInterval(Interval{2, 4}, Interval{1, 2}); d != (Interval{0, 3}) {
		t.Errorf("difference interval = %v, want {0 3}", d)
	}
}

// samples returns go test lines of name with the given ns/op and allocs/op.
func samples(name string, allocs float64, ns ...float64) string {
	var b strings.Builder
	for _, v := range ns {
		fmt.Fprintf(&b, "Benchmark%s-2 \t1000\t %g ns/op\t 100 B/op\t %g allocs/op\n", name, v, allocs)
	}
	return b.String()
}

// TestEvaluateConfidence: six runs each; a target met by the median but
// whose interval crosses the limit reads unsure, one met whatever the noise
// reads met; the retired targets show floor-yamux's own ratio.
func TestEvaluateConfidence(t *testing.T) {
	in := samples("Unary/zerodial-mux/16B", 8, 20000, 21000, 22000, 23000, 24000, 25000) +
		samples("Unary/floor-yamux/16B", 4, 30000, 31000, 32000, 33000, 34000, 35000) +
		samples("Unary/floor-tcp/16B", 0, 13000, 13500, 14000, 14000, 14500, 15000) +
		samples("Unary/zerodial-tcp/1MiB", 19, 1.0e6, 1.1e6, 1.2e6, 1.3e6, 1.4e6, 1.5e6) +
		samples("Unary/zerodial-mux/1MiB", 36, 1.2e6, 1.3e6, 1.4e6, 1.5e6, 1.6e6, 1.7e6)
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, o := range Evaluate(s) {
		got[o.Target.String()] = o
	}
	for name, want := range map[string]Verdict{
		"zerodial-mux ≤ 1.1× floor-yamux (16B ns/op)":     Met,
		"zerodial-mux ≤ 1.3× zerodial-tcp (1MiB ns/op)":   Unsure, // median 1.16×, interval up to 1.7×
		"zerodial-mux ≤ 2× zerodial-tcp (1MiB allocs/op)": Met,
		"zerodial-mux ≤ 0.8× netrpc-yamux (1MiB ns/op)":   Unsure, // no data
		"zerodial-mux allocs/op ≤ 8 (16B)":                Met,
	} {
		o, ok := got[name]
		if !ok {
			t.Errorf("no target %q", name)
			continue
		}
		if o.Verdict != want {
			t.Errorf("%s: verdict %v (interval %v, median %v), want %v", name, o.Verdict, o.Interval, o.Value, want)
		}
	}
	if o := got["zerodial-mux ≤ 1.3× zerodial-tcp (1MiB ns/op)"]; !o.Met {
		t.Errorf("median of 1MiB ratio %v reads missed", o.Value)
	}

	rs := EvaluateRetired(s)
	if len(rs) != 2 {
		t.Fatalf("%d retired targets, want 2", len(rs))
	}
	r := rs[0]
	if r.Target.String() != "zerodial-mux ≤ 2× floor-tcp (16B ns/op)" || !r.Own.OK || !r.By.OK {
		t.Fatalf("first retired target: %+v", r)
	}
	if want := 32500.0 / 14000; math.Abs(r.By.Value-want) > 1e-9 {
		t.Errorf("floor-yamux ÷ floor-tcp = %v, want %v", r.By.Value, want)
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 6}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| zerodial-mux ≤ 1.1× floor-yamux (16B ns/op) | 0.69× | 0.57× – 0.83× | met |",
		"| zerodial-mux ≤ 1.3× zerodial-tcp (1MiB ns/op) | 1.16× | 0.80× – 1.70× | unsure (median: met) |",
		"| ~~zerodial-mux ≤ 2× floor-tcp (16B ns/op)~~ | 1.61× | floor-yamux (ns/op) | 2.32× |",
		"| ~~zerodial-mux ≤ 0.33× grpc-tcp (16B ns/op)~~ | no data | floor-yamux (ns/op) | no data |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}
