package tcp

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/zerodial/transport/fallback"
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

// WithCompressionThreshold sets the smallest message body compressed, in
// bytes (transport.DefaultCompressionThreshold, 1 KiB, by default). Bodies
// this large or larger are compressed with S2 when the peer announced in
// its preface that it accepts compressed frames (WIRE.md, "Compression"),
// and go as they are otherwise, or when compression does not shrink them
// by an eighth; after such a body the next eight are not tried, so that
// incompressible traffic costs little. n must be at least 1; otherwise Dial and Listen (or NewSocket)
// fail. A peer without compression, of any version, interoperates: it
// announces nothing and is sent nothing compressed.
func WithCompressionThreshold(n int) Option {
	return option(func(c *options.Common) { c.SetCompressionThreshold(n) })
}

// WithoutCompression turns compression off both ways: this end neither
// compresses what it sends nor announces that it accepts compressed frames,
// so its peer sends none. Compression costs CPU that a fast link (loopback,
// a LAN of 10 Gbit/s or more) does not pay back on large compressible
// bodies; on slower links it pays many times over.
func WithoutCompression() Option {
	return option(func(c *options.Common) { c.CompressionThreshold = 0 })
}

// WithTLS makes the Transport speak TLS with cfg: Dial uses it as a client
// configuration and Listen as a server one. cfg is cloned when the option
// is applied, so later changes to it have no effect; a nil cfg means no
// TLS, the default. NewSocket refuses it: TLS over a connection of the
// caller's is the caller's to set up (pass a *tls.Conn).
func WithTLS(cfg *tls.Config) Option {
	return option(func(c *options.Common) { c.SetTLS(cfg) })
}

// WithFallback makes the listeners of the Transport serve, on their port,
// the clients that do not speak zerodial as well (WIRE.md, "One port"): a
// listener then reads a connection's first bytes before it writes any, sets
// it up as usual when they are a zerodial preface, and otherwise hands it
// to fb (fallback.Listener.Offer), where Accept returns it with those bytes
// replayed, classified by fallback.Classify. Nothing is sent to such a
// client. The preface and the bytes read to classify are bounded by one
// handshake timeout (WithHandshakeTimeout), during which the connection
// holds one of the listener's 256 places for connections not yet accepted;
// a client that sends nothing, part of a preface, or too little to tell
// its kind within it is dropped (logged at Debug), and one that fb refuses
// (its queue full or closed) is closed by fb.
//
// With TLS (WithTLS), the TLS handshake comes first and the first bytes
// read are TLS application data: fb receives the *tls.Conn, TLS
// terminated, wrapped so as to replay them. A client that negotiated an
// ALPN protocol (h2 or http/1.1, when cfg.NextProtos lists them) is handed
// to fb as the *tls.Conn itself, without a byte read, zerodial having no
// ALPN protocol of its own; so a zerodial Dial must not offer one that the
// listener's configuration lists.
//
// A listener's Close does not close fb, which may serve other listeners
// (or a program's own) and whose Accept loops are the program's: close it
// when they are done. Dial is unaffected. A nil fb means none, the
// default. NewSocket refuses it.
func WithFallback(fb *fallback.Listener) Option {
	return option(func(c *options.Common) { c.SetFallback(fb) })
}

// WithLogger sends the transport's diagnostics (connections a listener
// dropped before Accept, a failed NewSocket exchange) to l; a nil l
// discards them, as the default does.
func WithLogger(l *slog.Logger) Option {
	return option(func(c *options.Common) { c.SetLogger(l) })
}

// WithHandshakeTimeout bounds each step of a connection's set-up that
// waits for the peer, on either end: the TLS handshake, when TLS is
// configured, and the exchange of connection prefaces (WIRE.md, section
// 2). It is transport.DefaultHandshakeTimeout, 10 s, by default. A peer
// silent for longer fails Dial, or is dropped by the listener before
// Accept returns it; Dial is bounded by its context as well. d must be
// positive, or Dial and Listen (or NewSocket) fail.
//
// It is also how long a listener can be kept from new clients: it sets up
// at most 256 connections at once, so 256 peers that connect and send
// nothing hold every place, and every client that comes after them,
// zerodial's or a fallback's, waits in the kernel's backlog until they are
// dropped, one handshake timeout after they connected. A shorter d
// shortens that wait.
func WithHandshakeTimeout(d time.Duration) Option {
	return option(func(c *options.Common) { c.SetHandshakeTimeout(d) })
}

// WithFrameTimeout bounds how long the rest of a message may take to
// arrive once its first byte has, as net/http's ReadHeaderTimeout bounds a
// request's header: a peer that stops part way through a frame fails Recv
// with transport.ErrTimeout and its connection is closed, instead of
// holding it, its buffers and its reader for as long as the read deadline
// allows. It is transport.DefaultFrameTimeout, 30 s, by default, enough for
// a 4 MiB message at 150 KB/s. A Socket's read deadline still applies,
// whichever ends first. Zero turns the bound off; a negative d makes Dial
// and Listen (or NewSocket) fail. A connection that sends nothing at all
// between messages is not bounded here: that is an idle timeout, which
// dispatch's Server has (dispatch.WithIdleTimeout).
func WithFrameTimeout(d time.Duration) Option {
	return option(func(c *options.Common) { c.SetFrameTimeout(d) })
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
