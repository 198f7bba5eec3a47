package shm_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the tests, or, in a child process of the two-process
// tests (child_test.go), serves instead and runs none.
func TestMain(m *testing.M) {
	if kind := os.Getenv(childEnv); kind != "" {
		os.Exit(serveChild(kind))
	}
	goleak.VerifyTestMain(m)
}
