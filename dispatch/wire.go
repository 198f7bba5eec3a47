package dispatch

import (
	"strconv"
	"time"

	"github.com/zerodial/transport/codec"
)

// Header keys beyond those of package codec (WIRE.md, section 3).
const (
	// headerTimeout carries the caller's remaining time in nanoseconds,
	// decimal. Relative, so the two clocks need not agree.
	headerTimeout = "Timeout"
	// headerErrorCode carries an Error's Code next to codec.HeaderError.
	headerErrorCode = "Error-Code"
	// metadataPrefix starts the key of every metadata entry.
	metadataPrefix = "Md-"
)

// Aliases, for brevity.
const (
	headerServiceMethod = codec.HeaderServiceMethod
	headerSeq           = codec.HeaderSeq
	headerError         = codec.HeaderError
	headerContentType   = codec.HeaderContentType
	headerCancel        = codec.HeaderCancel
)

func formatTimeout(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return strconv.FormatInt(int64(d), 10)
}

func parseTimeout(s string) (time.Duration, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n), true
}
