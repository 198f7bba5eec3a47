package dispatch_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// unixDir holds the socket files of the listeners transports' unix
// entries make: short-named (a socket path has at most 107 bytes), made
// when the test binary starts and removed by TestMain.
var unixDir = func() string {
	dir, err := os.MkdirTemp("", "zdd")
	if err != nil {
		panic(err)
	}
	return dir
}()

// TestMain fails the run if any goroutine a test started is still running
// at the end, and removes unixDir.
func TestMain(m *testing.M) { goleak.VerifyTestMain(removingUnixDir{m}) }

// removingUnixDir runs the tests, then removes unixDir.
type removingUnixDir struct{ m *testing.M }

func (r removingUnixDir) Run() int {
	defer os.RemoveAll(unixDir)
	return r.m.Run()
}
