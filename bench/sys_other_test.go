//go:build !unix

package bench

import "time"

// cpuTime cannot be read here: the cpu-ns/op metric is left out.
func cpuTime() (time.Duration, bool) { return 0, false }

// ensureFDs does nothing here: BenchmarkIdle finds out when a Dial fails.
func ensureFDs(int) error { return nil }
