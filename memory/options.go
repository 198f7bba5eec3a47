package memory

import (
	"log/slog"

	"github.com/zerodial/transport/internal/options"
)

// Option configures a Transport made by New. Only this package's With
// functions make one, so an option of another transport (tcp.WithTLS,
// mux.WithKeepAlive) is refused by the compiler rather than ignored.
type Option interface {
	apply(*options.Common)
}

// option is every Option of this package.
type option func(*options.Common)

func (o option) apply(c *options.Common) { o(c) }

// WithMaxFrameSize sets the largest message, in bytes, header block
// included (transport.DefaultMaxFrameSize, 4 MiB, by default). A larger Send
// fails with transport.ErrFrameTooLarge. n must be between 1 and
// transport.MaxFrameSizeLimit; otherwise Dial and Listen fail.
func WithMaxFrameSize(n int) Option {
	return option(func(c *options.Common) { c.SetMaxFrameSize(n) })
}

// WithLogger sends the transport's diagnostics to l; a nil l discards them,
// as the default does. The memory transport has nothing to report today;
// the option is here so that one logger can be given to every transport
// alike.
func WithLogger(l *slog.Logger) Option {
	return option(func(c *options.Common) { c.SetLogger(l) })
}
