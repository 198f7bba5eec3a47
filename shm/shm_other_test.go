//go:build !linux

package shm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/shm"
)

// TestNeedsLinux: off Linux, Dial and Listen fail and say that shared
// memory needs Linux, and what serves instead.
func TestNeedsLinux(t *testing.T) {
	tr := shm.New()
	defer tr.Close()
	_, err := tr.Listen("unix:/tmp/x.sock")
	assert.ErrorContains(t, err, "shared memory between processes needs Linux")
	assert.ErrorContains(t, err, "unix:PATH")
	_, err = tr.Dial(context.Background(), "unix:/tmp/x.sock")
	assert.ErrorContains(t, err, "shared memory between processes needs Linux")
}
