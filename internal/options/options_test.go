package options_test

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/options"
)

func TestDefaults(t *testing.T) {
	c := options.New("tcp")
	assert.Equal(t, transport.DefaultMaxFrameSize, c.MaxFrameSize)
	assert.Nil(t, c.TLS)
	require.NotNil(t, c.Logger)
	assert.False(t, c.Logger.Enabled(t.Context(), slog.LevelError), "the default logger discards")
	assert.NoError(t, c.Err())
}

// TestSetMaxFrameSize: sizes from 1 to the wire's 32-bit limit are taken;
// others are refused, named with their value, and leave the size as it was
// (no quiet default or clamp).
func TestSetMaxFrameSize(t *testing.T) {
	for _, n := range []int{1, 1024, transport.DefaultMaxFrameSize} {
		c := options.New("tcp")
		c.SetMaxFrameSize(n)
		assert.Equal(t, n, c.MaxFrameSize)
		assert.NoError(t, c.Err())
	}
	bad := []int{0, -1, math.MinInt}
	if strconv.IntSize == 64 {
		c := options.New("tcp")
		c.SetMaxFrameSize(int(uint64(transport.MaxFrameSizeLimit))) // the wire's lengths are 32 bits
		assert.Equal(t, int(uint64(transport.MaxFrameSizeLimit)), c.MaxFrameSize)
		assert.NoError(t, c.Err())
		bad = append(bad, int(uint64(transport.MaxFrameSizeLimit)+1), math.MaxInt)
	}
	for _, n := range bad {
		c := options.New("tcp")
		c.SetMaxFrameSize(n)
		assert.Equal(t, transport.DefaultMaxFrameSize, c.MaxFrameSize)
		assert.EqualError(t, c.Err(), "tcp: WithMaxFrameSize("+strconv.Itoa(n)+"): must be between 1 and 4294967295")
	}
}

// TestSetTLS: the configuration is cloned, so later changes to the
// caller's have no effect; nil means no TLS.
func TestSetTLS(t *testing.T) {
	cfg := &tls.Config{ServerName: "a"}
	c := options.New("tcp")
	c.SetTLS(cfg)
	cfg.ServerName = "b"
	require.NotNil(t, c.TLS)
	assert.Equal(t, "a", c.TLS.ServerName)
	c.SetTLS(nil)
	assert.Nil(t, c.TLS)
	assert.NoError(t, c.Err())
}

// TestSetLogger: a logger is used as given; nil discards.
func TestSetLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	c := options.New("mux")
	c.SetLogger(l)
	assert.Same(t, l, c.Logger)
	c.SetLogger(nil)
	require.NotNil(t, c.Logger)
	c.Logger.Error("dropped")
	assert.Zero(t, buf.Len())
	assert.NoError(t, c.Err())
}

// TestErrJoinsAll: Err names every problem recorded, in order, joined.
func TestErrJoinsAll(t *testing.T) {
	c := options.New("mux")
	c.SetMaxFrameSize(0)
	c.Invalid("WithKeepAlive", "-5s", "must not be negative")
	err := c.Err()
	assert.EqualError(t, err, "mux: WithMaxFrameSize(0): must be between 1 and 4294967295\n"+
		"mux: WithKeepAlive(-5s): must not be negative")
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "errors.Join's error")
	assert.Len(t, joined.Unwrap(), 2)
}

func TestSetTimeouts(t *testing.T) {
	c := options.New("tcp")
	c.SetHandshakeTimeout(time.Second)
	c.SetFrameTimeout(0)
	require.NoError(t, c.Err())
	assert.Equal(t, time.Second, c.HandshakeTimeout)
	assert.Zero(t, c.FrameTimeout, "zero turns the frame timeout off")

	c = options.New("tcp")
	c.SetHandshakeTimeout(0)
	c.SetFrameTimeout(-time.Second)
	assert.EqualError(t, c.Err(), "tcp: WithHandshakeTimeout(0s): must be positive\n"+
		"tcp: WithFrameTimeout(-1s): must not be negative")
	assert.Equal(t, transport.DefaultHandshakeTimeout, c.HandshakeTimeout, "a refused value leaves the default")
	assert.Equal(t, transport.DefaultFrameTimeout, c.FrameTimeout, "a refused value leaves the default")
}
