package etcdzerodial_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: every test
// closes its etcd clients and stops its embedded etcd server.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
