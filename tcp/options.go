package tcp

import (
	"crypto/tls"
	"log/slog"

	"github.com/zerodial/transport/internal/options"
)

// Option configures a Transport made by New, or a Socket made by NewSocket.
// Only this package's With functions make one, so an option of another
// transport (mux.WithKeepAlive, say) is refused by the compiler rather than
// ignored.
type Option interface {
	apply(*options.Common)
}

// option is every Option of this package.
type option func(*options.Common)

func (o option) apply(c *options.Common) { o(c) }

// WithMaxFrameSize sets the largest message, in bytes, header block
// included (transport.DefaultMaxFrameSize, 4 MiB, by default). A larger Send
// fails with transport.ErrFrameTooLarge, and a larger frame announced by the
// peer is refused before anything is allocated. n must be between 1 and
// transport.MaxFrameSizeLimit; otherwise Dial and Listen (or NewSocket)
// fail.
func WithMaxFrameSize(n int) Option {
	return option(func(c *options.Common) { c.SetMaxFrameSize(n) })
}

// WithTLS makes the Transport speak TLS with cfg: Dial uses it as a client
// configuration and Listen as a server one. cfg is cloned when the option
// is applied, so later changes to it have no effect; a nil cfg means no
// TLS, the default. NewSocket refuses it: TLS over a connection of the
// caller's is the caller's to set up (pass a *tls.Conn).
func WithTLS(cfg *tls.Config) Option {
	return option(func(c *options.Common) { c.SetTLS(cfg) })
}

// WithLogger sends the transport's diagnostics (connections a listener
// dropped before Accept, a failed NewSocket exchange) to l; a nil l
// discards them, as the default does.
func WithLogger(l *slog.Logger) Option {
	return option(func(c *options.Common) { c.SetLogger(l) })
}

// apply builds the settings of opts, applied in order over the defaults.
func apply(opts []Option) options.Common {
	o := options.New("tcp")
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o
}
