package dispatch

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/internal/sweep"
)

// A hold is taken once: by take at any time, by takeStale only once it is
// QuietAfter old; of many takers at once, exactly one gets it.
func TestReplyHoldTakenOnce(t *testing.T) {
	var h replyHold
	assert.False(t, h.held())
	assert.False(t, h.take(), "nothing held")

	const now = int64(1_000_000_000)
	h.hold(now)
	assert.True(t, h.held())
	assert.False(t, h.takeStale(now+int64(sweep.QuietAfter)-1), "held for less than QuietAfter")
	assert.True(t, h.takeStale(now+int64(sweep.QuietAfter)))
	assert.False(t, h.held())
	assert.False(t, h.take(), "taken already")

	h.hold(0) // a clock at zero still holds
	assert.True(t, h.held())
	assert.True(t, h.take())

	for range 100 {
		h.hold(now)
		var took atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if i%2 == 0 && h.take() || i%2 == 1 && h.takeStale(now+int64(sweep.QuietAfter)) {
					took.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(1), took.Load())
	}
}
