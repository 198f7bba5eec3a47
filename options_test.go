package transport_test

import (
	"math"
	"testing"

	"github.com/zerodial/transport"
)

func TestWithMaxFrameSize(t *testing.T) {
	for _, tt := range []struct{ in, want int }{
		{0, transport.DefaultMaxFrameSize},
		{-1, transport.DefaultMaxFrameSize},
		{1024, 1024},
		{math.MaxInt, transport.MaxFrameSizeLimit}, // the wire's lengths are 32 bits
	} {
		if got := transport.Apply(transport.WithMaxFrameSize(tt.in)).MaxFrameSize; got != tt.want {
			t.Errorf("WithMaxFrameSize(%d) gives %d, want %d", tt.in, got, tt.want)
		}
	}
}
