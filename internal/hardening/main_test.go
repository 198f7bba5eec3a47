package hardening

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine a test started is still running
// at the end: every setup here must stop what it starts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
