package transport

import (
	"crypto/tls"
	"log/slog"
	"math"
)

// DefaultMaxFrameSize is the default limit on one message: 4 MiB.
const DefaultMaxFrameSize = 4 << 20

// Options holds the settings every transport understands. Constructors
// start from DefaultOptions and apply each Option in order.
type Options struct {
	// MaxFrameSize bounds one message (header block plus body, as WIRE.md
	// counts it). Larger messages fail with ErrFrameTooLarge, and a peer's
	// announced size is checked against it before anything is allocated.
	MaxFrameSize int
	// TLSConfig, when not nil, makes a network transport speak TLS: Dial
	// uses it as a client configuration and Listen as a server one. The
	// memory transport has no wire and ignores it.
	TLSConfig *tls.Config
	// Logger receives the transport's diagnostics. It is never nil after
	// DefaultOptions; the default discards everything.
	Logger *slog.Logger
}

// DefaultOptions returns the options a transport starts from.
func DefaultOptions() Options {
	return Options{
		MaxFrameSize: DefaultMaxFrameSize,
		Logger:       slog.New(slog.DiscardHandler),
	}
}

// Option changes Options. Transports may define options of their own; they
// implement Option too and are recognised by type assertion, so every
// constructor takes one list.
type Option interface {
	ApplyOption(*Options)
}

// OptionFunc adapts a function to an Option.
type OptionFunc func(*Options)

// ApplyOption calls f(o).
func (f OptionFunc) ApplyOption(o *Options) { f(o) }

// MaxFrameSizeLimit is the largest frame limit there can be: the wire
// carries each length in 32 bits (WIRE.md).
const MaxFrameSizeLimit = math.MaxUint32

// WithMaxFrameSize sets the largest message, in bytes, header block included.
// Values below 1 keep the default; values above MaxFrameSizeLimit are
// lowered to it.
func WithMaxFrameSize(n int) Option {
	return OptionFunc(func(o *Options) {
		if n > 0 {
			o.MaxFrameSize = int(min(uint64(n), MaxFrameSizeLimit))
		}
	})
}

// WithTLS makes a network transport use TLS with cfg (cloned when the
// transport is built, so later changes to cfg have no effect).
func WithTLS(cfg *tls.Config) Option {
	return OptionFunc(func(o *Options) { o.TLSConfig = cfg.Clone() })
}

// WithLogger sends the transport's diagnostics to l. A nil l discards them.
func WithLogger(l *slog.Logger) Option {
	return OptionFunc(func(o *Options) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.Logger = l
	})
}

// Apply builds Options from DefaultOptions and opts, for use by transport
// constructors. Nil options are skipped.
func Apply(opts ...Option) Options {
	o := DefaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.ApplyOption(&o)
		}
	}
	return o
}
