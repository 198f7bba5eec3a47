package dispatchtest_test

import (
	"testing"

	"github.com/zerodial/transport/dispatchtest"
)

// The example's binding passes the suite: a Transport of one's own, held
// to the promise.
func TestExampleBinding(t *testing.T) { dispatchtest.Run(t, countingBinding()) }
