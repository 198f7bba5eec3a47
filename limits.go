package transport

import (
	"math"
	"time"
)

// DefaultMaxFrameSize is the default limit on one message: 4 MiB. Each
// transport's WithMaxFrameSize option changes it.
const DefaultMaxFrameSize = 4 << 20

// MaxFrameSizeLimit is the largest frame limit there can be: the wire
// carries each length in 32 bits (WIRE.md).
const MaxFrameSizeLimit = math.MaxUint32

// DefaultHandshakeTimeout bounds each step of a network connection's
// set-up that waits for the peer, on either end: the TLS handshake, when
// TLS is configured, and the exchange of connection prefaces (WIRE.md,
// section 2). The tcp and mux transports' WithHandshakeTimeout option
// changes it.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultFrameTimeout bounds how long the rest of a frame may take to
// arrive once its first byte has, on the tcp and mux transports: long
// enough for a frame of DefaultMaxFrameSize at 150 KB/s, short enough
// that a peer stopping half way through a frame does not hold its
// connection for long. Their WithFrameTimeout option changes it.
const DefaultFrameTimeout = 30 * time.Second

// DefaultCompressionThreshold is the smallest message body the tcp and mux
// transports compress (with S2, WIRE.md "Compression") when the peer
// accepts compressed frames: 1 KiB. A body that compression does not
// shrink by an eighth goes as it is. Their WithCompressionThreshold option
// changes it, and WithoutCompression turns compression off both ways.
const DefaultCompressionThreshold = 1 << 10
