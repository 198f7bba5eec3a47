package bench

import (
	"testing"
	"time"
)

// cpuMeter measures the CPU time (user + system, every thread of the
// process: both ends of the call, the runtime, the GC) spent between
// startCPU and report, per op. Each is one getrusage system call, made
// outside the timed loop.
type cpuMeter struct {
	t0 time.Duration
	ok bool
}

func startCPU() cpuMeter {
	t0, ok := cpuTime()
	return cpuMeter{t0, ok}
}

// report adds the metric cpu-ns/op: CPU time since startCPU divided by
// b.N. Call it once the timed loop has ended (b.N is then its count).
func (m cpuMeter) report(b *testing.B) {
	t1, ok := cpuTime()
	if !ok || !m.ok || b.N <= 0 {
		return
	}
	b.ReportMetric(float64(t1-m.t0)/float64(b.N), "cpu-ns/op")
}
