package mux

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// TestStreamWindowFollowsFrameLimit: the default window is the frame limit
// plus windowHeadroom, never below yamux's minimum nor above what yamux can
// carry; WithStreamWindow overrides it.
func TestStreamWindowFollowsFrameLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		opts []Option
		want uint32
	}{
		"default":                  {nil, transport.DefaultMaxFrameSize + windowHeadroom},
		"larger frame limit":       {[]Option{WithMaxFrameSize(16 << 20)}, 16<<20 + windowHeadroom},
		"small frame limit":        {[]Option{WithMaxFrameSize(1 << 10)}, MinStreamWindow},
		"largest frame limit":      {[]Option{WithMaxFrameSize(math.MaxUint32)}, math.MaxUint32},
		"WithStreamWindow":         {[]Option{WithStreamWindow(1 << 20)}, 1 << 20},
		"WithStreamWindow, larger": {[]Option{WithMaxFrameSize(16 << 20), WithStreamWindow(MinStreamWindow)}, MinStreamWindow},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := newTransport(t, tc.opts...).cfg
			require.NoError(t, cfg.validate())
			assert.Equal(t, tc.want, cfg.streamWindow())
			assert.Equal(t, tc.want, cfg.sessionConfig(discardLogger{}).MaxStreamWindowSize)
		})
	}
}

// TestDefaultWindowHoldsFrameOfLimit: with the default window, a message of
// the frame limit's size is sent whole while nobody reads the far end: it
// crosses in one window, with no wait for the reader. With yamux's own
// window (the minimum) the same Send waits for a reader that never comes,
// until its deadline.
func TestDefaultWindowHoldsFrameOfLimit(t *testing.T) {
	big := &transport.Message{Body: incompressible(transport.DefaultMaxFrameSize)}
	for name, tc := range map[string]struct {
		opts    []Option
		wantErr error
	}{
		"default":         {nil, nil},
		"yamux's default": {[]Option{WithStreamWindow(MinStreamWindow)}, transport.ErrTimeout},
	} {
		t.Run(name, func(t *testing.T) {
			// Both ends: each end's window is what it lets the other send.
			tr := newTransport(t, tc.opts...)
			l := listen(t, tr)
			acc := acceptOne(l)
			c := dial(t, tr, l.Addr().String())
			s := await(t, acc, waitLong, "Accept")
			defer s.Close()
			// Not a bound on speed: it ends the wait for a reader, and
			// would end a Send that hangs, so it is a hang guard for the
			// Send that must cross (2 s, which a loaded machine could take
			// to carry 4 MiB, failed it).
			deadline := 2 * time.Second
			if tc.wantErr == nil {
				deadline = waitLong
			}
			require.NoError(t, c.SetWriteDeadline(time.Now().Add(deadline)))
			err := c.Send(big)
			if tc.wantErr == nil {
				require.NoError(t, err)
				var got transport.Message
				require.NoError(t, s.Recv(&got))
				assert.Len(t, got.Body, len(big.Body))
				return
			}
			assert.ErrorIs(t, err, tc.wantErr)
		})
	}
}
