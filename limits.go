package transport

import "math"

// DefaultMaxFrameSize is the default limit on one message: 4 MiB. Each
// transport's WithMaxFrameSize option changes it.
const DefaultMaxFrameSize = 4 << 20

// MaxFrameSizeLimit is the largest frame limit there can be: the wire
// carries each length in 32 bits (WIRE.md).
const MaxFrameSizeLimit = math.MaxUint32
