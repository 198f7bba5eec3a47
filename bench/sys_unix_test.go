//go:build unix

package bench

import (
	"fmt"
	"syscall"
	"time"
)

// cpuTime is the user and system CPU time this process has used so far, on
// every thread (getrusage RUSAGE_SELF), and false where it cannot be read.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// ensureFDs raises the soft limit of open files to at least need (and the
// hard one, where this process may), and fails if it cannot.
func ensureFDs(need int) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	if rl.Cur >= uint64(need) {
		return nil
	}
	want := rl
	want.Cur = uint64(need)
	want.Max = max(rl.Max, uint64(need))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
		return nil
	}
	if rl.Max >= uint64(need) {
		want = syscall.Rlimit{Cur: uint64(need), Max: rl.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
			return nil
		}
	}
	return fmt.Errorf("the open-file limit is %d (hard %d) and could not be raised", rl.Cur, rl.Max)
}
