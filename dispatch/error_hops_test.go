package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// A call's own failures name it and the path it took: the end of its
// context (an *Error with the context's code) and its closed Client's
// ErrShutdown (not an *Error). Before, both were the bare words of the
// context or of ErrShutdown.
func TestOwnFailuresNameTheCall(t *testing.T) {
	for _, p := range pathsAndNetRPC() {
		t.Run(p.name, func(t *testing.T) {
			e := p.setup(t)
			ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
			defer cancel()
			err := e.client.Call(ctx, "Arith.Multiply", Args{2, 3}, new(int))
			assert.EqualError(t, err, "Arith.Multiply over "+p.name+": context deadline exceeded")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, dispatch.CodeDeadlineExceeded, codeOf(err))

			require.NoError(t, e.client.Close())
			err = e.client.Call(context.Background(), "Arith.Multiply", Args{2, 3}, new(int))
			assert.EqualError(t, err, "Arith.Multiply over "+p.name+": connection is shut down")
			assert.ErrorIs(t, err, dispatch.ErrShutdown)
			var de *dispatch.Error
			assert.False(t, errors.As(err, &de), "a Client's own failure is not an *Error")
		})
	}
}
