package main

import (
	"math"

	"golang.org/x/perf/benchmath"
)

// confidence is the level of each median's interval: benchstat's.
const confidence = 0.95

// Interval is a range that holds a median, or a ratio or difference of two,
// with the confidence the report states; Lo may be -Inf and Hi +Inf when
// there are too few samples to say more.
type Interval struct{ Lo, Hi float64 }

// medianInterval returns the confidence interval of the median of xs as
// benchstat computes it (benchmath.AssumeNothing: order statistics, no
// assumption about the distribution). With fewer than 6 samples the 95%
// interval is unbounded: 5 runs cannot say with that confidence where the
// median lies.
func medianInterval(xs []float64) Interval {
	s := benchmath.NewSample(append([]float64(nil), xs...), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, confidence)
	return Interval{sum.Lo, sum.Hi}
}

// ratioInterval is the widest range a/b spans over a in ia and b in ib,
// both positive: it holds a/b whenever both intervals hold their medians,
// so with at least 1-2(1-confidence) confidence (90%).
func ratioInterval(ia, ib Interval) Interval {
	if ib.Lo <= 0 || math.IsInf(ia.Lo, 0) || math.IsInf(ib.Lo, 0) {
		return Interval{math.Inf(-1), math.Inf(1)}
	}
	return Interval{ia.Lo / ib.Hi, ia.Hi / ib.Lo}
}

// diffInterval is the widest range a-b spans over a in ia and b in ib.
func diffInterval(ia, ib Interval) Interval {
	return Interval{ia.Lo - ib.Hi, ia.Hi - ib.Lo}
}

// Bounded reports whether the interval is finite.
func (iv Interval) Bounded() bool { return !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) }

// Verdict is what a run says of a target.
type Verdict int

const (
	// Unsure: the interval straddles the limit, or is unbounded; the
	// median alone may read either way.
	Unsure Verdict = iota
	// Met: the whole interval meets the limit.
	Met
	// Missed: the whole interval misses it.
	Missed
)

// judge returns the verdict of an interval against a limit by op ("<=",
// "<=+" or ">=").
func judge(iv Interval, op string, limit float64) Verdict {
	switch {
	case op == ">=" && iv.Lo >= limit, op != ">=" && iv.Hi <= limit:
		return Met
	case op == ">=" && iv.Hi < limit, op != ">=" && iv.Lo > limit:
		return Missed
	}
	return Unsure
}
