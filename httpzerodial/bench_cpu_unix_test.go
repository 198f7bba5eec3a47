//go:build unix

package httpzerodial_test

import (
	"syscall"
	"testing"
	"time"
)

// startCPU returns a function that reports cpu-ns/op: the process's user
// and system CPU time since startCPU (both ends, every goroutine, the GC)
// per op, which a busy machine distorts less than the wall clock's ns/op.
func startCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
