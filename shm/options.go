package shm

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/zerodial/transport/internal/options"
)

// Option configures a Transport made by New. Only this package's With
// functions make one, so an option of another transport (tcp.WithTLS,
// say) is refused by the compiler rather than ignored.
type Option interface {
	apply(*settings)
}

// settings are the options every transport shares and the ring's size.
type settings struct {
	options.Common
	ringSize int
}

// option is every Option of this package.
type option func(*settings)

func (o option) apply(s *settings) { o(s) }

// WithMaxFrameSize sets the largest message, in bytes, header block
// included (transport.DefaultMaxFrameSize, 4 MiB, by default). A larger
// Send fails with transport.ErrFrameTooLarge, and a larger message
// announced by the peer is refused before anything is allocated. n must
// be between 1 and transport.MaxFrameSizeLimit; otherwise Dial and Listen
// fail.
func WithMaxFrameSize(n int) Option {
	return option(func(s *settings) { s.SetMaxFrameSize(n) })
}

// WithRingSize sets the size, in bytes, of each of a connection's two
// rings (2 MiB by default): the memory a Dial maps, twice over, and how
// much one end may write before it waits for the other to read. A message
// larger than the ring goes through in parts. n must be a power of two
// between 64 KiB and 256 MiB; otherwise Dial fails. The dialling end
// chooses the size, and the listener takes it.
func WithRingSize(n int) Option {
	return option(func(s *settings) {
		if !validRingSize(n) {
			s.Invalid("WithRingSize", n, fmt.Sprintf("must be a power of two between %d and %d", minRingSize, maxRingSize))
			return
		}
		s.ringSize = n
	})
}

// WithHandshakeTimeout bounds the meeting of a connection's two ends
// (transport.DefaultHandshakeTimeout by default): the exchange of the
// shared memory and the wake-ups over the unix socket. A peer that does not
// answer in time fails Dial, or is dropped by the listener. d must be
// positive; otherwise Dial and Listen fail.
func WithHandshakeTimeout(d time.Duration) Option {
	return option(func(s *settings) { s.SetHandshakeTimeout(d) })
}

// WithLogger sends the transport's diagnostics to l (a listener's refused
// connections); a nil l discards them, as the default does.
func WithLogger(l *slog.Logger) Option {
	return option(func(s *settings) { s.SetLogger(l) })
}
