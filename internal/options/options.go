// Package options holds the settings every transport shares — the frame
// limit, TLS, the logger and the network transports' timeouts — with their defaults and their validation, so
// that the memory, tcp and mux packages, which each define an Option type
// of their own, apply them alike and report the same errors.
//
// A setter never panics and never quietly corrects a value: it records what
// is wrong, naming the option and the value, and Err reports every recorded
// problem at once. The transports keep that error and return it from every
// Dial and Listen.
package options

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/fallback"
)

// Common holds the settings every transport understands. Make one with New;
// the zero value has no logger and names no transport in its errors.
type Common struct {
	// MaxFrameSize bounds one message (header block plus body, as WIRE.md
	// counts it). Larger messages fail with transport.ErrFrameTooLarge, and
	// a peer's announced size is checked against it before anything is
	// allocated.
	MaxFrameSize int
	// TLS, when not nil, makes a network transport speak TLS: Dial uses it
	// as a client configuration and Listen as a server one.
	TLS *tls.Config
	// Logger receives the transport's diagnostics. It is never nil after
	// New; the default discards everything.
	Logger *slog.Logger
	// HandshakeTimeout bounds each step of a network connection's set-up
	// that waits for the peer: the TLS handshake and the preface exchange.
	HandshakeTimeout time.Duration
	// FrameTimeout bounds how long the rest of a frame may take to arrive
	// once its first byte has; zero means no bound.
	FrameTimeout time.Duration
	// Fallback, when not nil, takes the connections a network listener
	// finds not to speak zerodial (WIRE.md, "One port").
	Fallback *fallback.Listener
	// CompressionThreshold is the smallest body a network transport
	// compresses for a peer that accepts it (WIRE.md, "Compression"); zero
	// turns compression off both ways: the end neither announces nor sends
	// it.
	CompressionThreshold int

	Problems
}

// Problems collects what a constructor's options refused, so that all of it
// is reported at once. The transports record through Common; dispatch uses
// it for its own options.
type Problems struct {
	pkg  string  // the package's name, which starts every error
	errs []error // what was refused, in order
}

// NewProblems returns a collector whose errors start with pkg ("dispatch").
func NewProblems(pkg string) Problems { return Problems{pkg: pkg} }

// New returns the defaults of the transport named pkg ("tcp"), whose name
// starts the errors it records.
func New(pkg string) Common {
	return Common{
		MaxFrameSize:         transport.DefaultMaxFrameSize,
		Logger:               slog.New(slog.DiscardHandler),
		HandshakeTimeout:     transport.DefaultHandshakeTimeout,
		FrameTimeout:         transport.DefaultFrameTimeout,
		CompressionThreshold: transport.DefaultCompressionThreshold,
		Problems:             NewProblems(pkg),
	}
}

// SetMaxFrameSize is WithMaxFrameSize: n must be between 1 and
// transport.MaxFrameSizeLimit, or the setting is refused and recorded.
func (c *Common) SetMaxFrameSize(n int) {
	if n < 1 || uint64(n) > transport.MaxFrameSizeLimit {
		c.Invalid("WithMaxFrameSize", n, fmt.Sprintf("must be between 1 and %d", uint64(transport.MaxFrameSizeLimit)))
		return
	}
	c.MaxFrameSize = n
}

// SetTLS is WithTLS: it keeps a clone of cfg, so that later changes to cfg
// have no effect. A nil cfg means no TLS.
func (c *Common) SetTLS(cfg *tls.Config) { c.TLS = cfg.Clone() }

// SetFallback is WithFallback: a nil l means none, the default.
func (c *Common) SetFallback(l *fallback.Listener) { c.Fallback = l }

// SetLogger is WithLogger: a nil l discards the diagnostics.
func (c *Common) SetLogger(l *slog.Logger) {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	c.Logger = l
}

// SetHandshakeTimeout is WithHandshakeTimeout: d must be positive, since a
// set-up step without a bound would let a silent peer hold a connection
// (and a listener's slot) for ever.
func (c *Common) SetHandshakeTimeout(d time.Duration) {
	if d <= 0 {
		c.Invalid("WithHandshakeTimeout", d, "must be positive")
		return
	}
	c.HandshakeTimeout = d
}

// SetFrameTimeout is WithFrameTimeout: zero turns the bound off; d must not
// be negative.
func (c *Common) SetFrameTimeout(d time.Duration) {
	if d < 0 {
		c.Invalid("WithFrameTimeout", d, "must not be negative")
		return
	}
	c.FrameTimeout = d
}

// SetCompressionThreshold is WithCompressionThreshold: n must be at least
// 1 (WithoutCompression turns compression off).
func (c *Common) SetCompressionThreshold(n int) {
	if n < 1 {
		c.Invalid("WithCompressionThreshold", n, "must be at least 1 (WithoutCompression turns compression off)")
		return
	}
	c.CompressionThreshold = n
}

// Invalid records that option, given value, is refused because of problem,
// as in "tcp: WithMaxFrameSize(0): must be between 1 and 4294967295".
// Transports record the problems of their own options with it, so that Err
// reports them with the shared ones.
func (p *Problems) Invalid(option string, value any, problem string) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s(%v): %s", p.pkg, option, value, problem))
}

// Refuse records that option is refused because of problem, for options
// whose value does not print: "dispatch: WithInterceptors: interceptor 0 is
// nil".
func (p *Problems) Refuse(option, problem string) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s: %s", p.pkg, option, problem))
}

// Err returns every problem recorded, joined (errors.Join) in the order
// the options were applied, or nil if there is none.
func (p *Problems) Err() error { return errors.Join(p.errs...) }
