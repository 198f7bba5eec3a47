//go:build unix

package main

import "syscall"

// fdLimit is the hard open-file limit, which BenchmarkIdle raises its own
// to; 0 when it cannot be read.
func fdLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Max
}
