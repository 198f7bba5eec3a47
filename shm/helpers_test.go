package shm_test

import (
	"runtime"
	"testing"
)

func skipUnlessLinux(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("shared memory needs Linux")
	}
}
