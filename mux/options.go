package mux

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/internal/options"
)

// Defaults of the mux-specific settings. They are yamux's own defaults except
// where noted; see each option for what the value bounds.
const (
	// DefaultAcceptBacklog is how many streams a session holds that the
	// listener has not yet accepted (and how many un-acknowledged opens a
	// dialler allows itself).
	DefaultAcceptBacklog = 256
	// DefaultKeepAlive is the interval between keepalive pings.
	DefaultKeepAlive = 30 * time.Second
	// DefaultWriteTimeout bounds one write to the connection, the wait for
	// a keepalive answer and a server's TLS handshake.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultStreamOpenTimeout is zero: no open timeout. yamux's own
	// default (75s) closes the whole session, and every stream on it, when
	// one opened stream goes unacknowledged that long, which a listener
	// that is merely slow to call Accept causes as surely as a dead peer.
	// Keepalive notices dead peers without that cost.
	DefaultStreamOpenTimeout time.Duration = 0
	// DefaultStreamCloseTimeout is how long a stream closed here waits for
	// the peer to close its end before it is reset. yamux uses five
	// minutes; a shorter wait frees the stream's receive buffer sooner.
	DefaultStreamCloseTimeout = time.Minute
	// MinStreamWindow is the smallest receive window of one stream that
	// yamux accepts (its own default), and so the smallest WithStreamWindow
	// accepts.
	MinStreamWindow = 256 << 10
	// DefaultStreamLimit is how many streams one session may have open at
	// once (yamux has no limit). It bounds what one peer can make this end
	// hold: every stream costs memory and, on a listener, usually a
	// goroutine serving it, however little it is used — some 24 KiB a
	// stream on each end once it has carried a message, so about 100 MiB
	// for a session at the limit. A dispatch.Client sends all its calls
	// over one stream, so a session past a few thousand streams means
	// thousands of Clients of one process calling one address, or a peer
	// that opens streams and leaves them: 4096 leaves room for heavy use.
	// WithStreamLimit changes it; WithStreamLimit(0) removes it.
	DefaultStreamLimit = 4096
)

// config holds the settings of a Transport: those every transport shares,
// and those only this one understands. Options record what they refuse in
// the shared part, so that one error names every invalid option.
type config struct {
	options.Common
	// yamux is the template every session copies; its Logger is set per
	// session, never here, so the template is never handed to yamux.
	yamux       yamux.Config
	streamLimit int
	// streamWin is WithStreamWindow's, 0 when not given: then
	// streamWindow follows the frame limit.
	streamWin int64
	dial      DialFunc
}

func defaultConfig() config {
	return config{
		Common: options.New("mux"),
		yamux: yamux.Config{
			AcceptBacklog:          DefaultAcceptBacklog,
			EnableKeepAlive:        true,
			KeepAliveInterval:      DefaultKeepAlive,
			ConnectionWriteTimeout: DefaultWriteTimeout,
			StreamOpenTimeout:      DefaultStreamOpenTimeout,
			StreamCloseTimeout:     DefaultStreamCloseTimeout,
		},
		streamLimit: DefaultStreamLimit,
		dial:        (&net.Dialer{}).DialContext,
	}
}

// validate reports every option refused, joined, so that Dial and Listen
// fail with a clear message rather than misbehave. The options check what
// yamux would refuse; yamux.VerifyConfig checks again, in case a yamux
// upgrade refuses more.
func (c *config) validate() error {
	if err := c.Err(); err != nil {
		return err
	}
	// yamux wants exactly one log destination, which every session gets.
	y := c.yamux
	y.MaxStreamWindowSize = c.streamWindow()
	y.Logger = discardLogger{}
	y.LogOutput = nil
	if err := yamux.VerifyConfig(&y); err != nil {
		return errInvalid(err)
	}
	return nil
}

// streamWindow returns the largest receive window of one stream:
// WithStreamWindow's, or by default the frame limit plus windowHeadroom, so
// that a message of any size the limit allows crosses in one window, with
// no wait part way for the reader to open it further. yamux's own 256 KiB
// made a 1 MiB message wait for the reader three or four times on its way,
// each wait a window update's round trip and a yamux frame more (bench's
// BenchmarkUnary/zerodial-mux/1MiB: about twice tcp's time). The window
// costs nothing while a stream is idle: yamux allocates a stream's receive
// buffer as data arrives and streamConn hands it back once drained
// (shrinkAfter); a reader that lags may hold up to a window, as it may hold
// a frame of the limit's size anyway.
func (c *config) streamWindow() uint32 {
	if c.streamWin > 0 {
		return uint32(c.streamWin)
	}
	return uint32(min(max(int64(c.MaxFrameSize)+windowHeadroom, MinStreamWindow), math.MaxUint32))
}

// windowHeadroom is what the default window holds beyond the frame limit:
// a frame's prefix and header block, and small messages queued behind a
// frame of the limit's size.
const windowHeadroom = 64 << 10

// sessionConfig returns a fresh yamux configuration for one session. yamux
// keeps the pointer for the session's life, so sessions never share one.
func (c *config) sessionConfig(l yamux.Logger) *yamux.Config {
	y := c.yamux
	y.MaxStreamWindowSize = c.streamWindow()
	y.Logger = l
	y.LogOutput = nil
	return &y
}

// DialFunc opens the connection a client session runs over. It has the
// signature of net.Dialer.DialContext; network is "tcp" and addr the
// address dialled, or, for a unix address ("unix:PATH", docs/unix.md),
// "unix" and the socket's path.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Option configures a Transport made by New. Only this package's With
// functions make one, so an option of another transport is refused by the
// compiler rather than ignored, and this package's options cannot be given
// to another.
type Option interface {
	apply(*config)
}

// option is every Option of this package.
type option func(*config)

func (o option) apply(c *config) { o(c) }

// WithMaxFrameSize sets the largest message, in bytes, header block
// included (transport.DefaultMaxFrameSize, 4 MiB, by default). A larger Send
// fails with transport.ErrFrameTooLarge, and a larger frame announced by the
// peer is refused before anything is allocated. n must be between 1 and
// transport.MaxFrameSizeLimit; otherwise Dial and Listen fail.
func WithMaxFrameSize(n int) Option {
	return option(func(c *config) { c.SetMaxFrameSize(n) })
}

// WithCompressionThreshold sets the smallest message body compressed, in
// bytes (transport.DefaultCompressionThreshold, 1 KiB, by default). Bodies
// this large or larger are compressed with S2 when the peer announced in
// its preface that it accepts compressed frames (WIRE.md, "Compression"),
// and go as they are otherwise, or when compression does not shrink them
// by an eighth; after such a body the next eight are not tried, so that
// incompressible traffic costs little. n must be at least 1; otherwise Dial and Listen
// fail. A peer without compression, of any version, interoperates: it
// announces nothing and is sent nothing compressed.
func WithCompressionThreshold(n int) Option {
	return option(func(c *config) { c.SetCompressionThreshold(n) })
}

// WithoutCompression turns compression off both ways: this end neither
// compresses what it sends nor announces that it accepts compressed frames,
// so its peer sends none. Compression costs CPU that a fast link (loopback,
// a LAN of 10 Gbit/s or more) does not pay back on large compressible
// bodies; on slower links it pays many times over.
func WithoutCompression() Option {
	return option(func(c *config) { c.CompressionThreshold = 0 })
}

// WithTLS makes the Transport speak TLS with cfg: Dial uses it as a client
// configuration and Listen as a server one. TLS runs over the connection a
// session is made on, the preface and yamux inside it. cfg is cloned when
// the option is applied, so later changes to it have no effect; a nil cfg
// means no TLS, the default.
func WithTLS(cfg *tls.Config) Option {
	return option(func(c *config) { c.SetTLS(cfg) })
}

// WithFallback makes the listeners of the Transport serve, on their port,
// the clients that do not speak zerodial as well (WIRE.md, "One port"): a
// listener then reads a connection's first bytes before it writes any,
// starts a session as usual when they are the mux preface, and otherwise
// hands the connection to fb (fallback.Listener.Offer), where Accept
// returns it with those bytes replayed, classified by fallback.Classify.
// Nothing is sent to such a client. The preface and the bytes read to
// classify are bounded by one handshake timeout (WithHandshakeTimeout),
// during which the connection holds one of the listener's 256 places for
// connections being set up; a client that sends nothing, part of a
// preface, or too little to tell its kind within it is dropped (logged at
// Debug), and one that fb refuses (its queue full or closed) is closed by
// fb.
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
// default. NewClientConn and NewServerConn refuse it.
func WithFallback(fb *fallback.Listener) Option {
	return option(func(c *config) { c.SetFallback(fb) })
}

// WithLogger sends the transport's diagnostics (sessions closed,
// connections a listener dropped, yamux's own messages) to l; a nil l
// discards them, as the default does. yamux's lines keep the level yamux
// gives them, except those whose error says only that the peer went away
// or the connection was closed here (a broken pipe, a reset, the end of the
// stream): the end of a session, reported to its streams, logged at Debug.
func WithLogger(l *slog.Logger) Option {
	return option(func(c *config) { c.SetLogger(l) })
}

// WithHandshakeTimeout bounds each step of a session's set-up that waits
// for the peer, on either end: the TLS handshake, when TLS is configured,
// and the exchange of connection prefaces (WIRE.md, section 2). It is
// transport.DefaultHandshakeTimeout, 10 s, by default. A peer silent for
// longer fails Dial, or is dropped by the listener; Dial is bounded by its
// context as well. d must be positive, or Dial and Listen fail.
//
// It is also how long a listener can be kept from new clients: it sets up
// at most 256 connections at once, so 256 peers that connect and send
// nothing hold every place, and every client that comes after them,
// zerodial's or a fallback's, waits in the kernel's backlog until they are
// dropped, one handshake timeout after they connected. A shorter d
// shortens that wait.
func WithHandshakeTimeout(d time.Duration) Option {
	return option(func(c *config) { c.SetHandshakeTimeout(d) })
}

// WithFrameTimeout bounds how long the rest of a message may take to
// arrive on a stream once its first byte has, as net/http's
// ReadHeaderTimeout bounds a request's header: a peer that stops part way
// through a message fails Recv with transport.ErrTimeout and its stream is
// closed. It is transport.DefaultFrameTimeout, 30 s, by default. A Socket's
// read deadline still applies, whichever ends first. Zero turns the bound
// off; a negative d makes Dial and Listen fail.
func WithFrameTimeout(d time.Duration) Option {
	return option(func(c *config) { c.SetFrameTimeout(d) })
}

// WithKeepAlive sets the interval between keepalive pings on every session.
// A peer that stops answering is noticed within the interval plus twice the
// write timeout (the ping's write and the wait for its answer), and the
// session is then closed: its streams fail and the next Dial reconnects.
// Zero turns keepalive off, which leaves a silent peer unnoticed until a
// write fails; a negative interval makes Dial and Listen fail.
func WithKeepAlive(interval time.Duration) Option {
	return option(func(c *config) {
		if interval < 0 {
			c.Invalid("WithKeepAlive", interval, "must not be negative")
			return
		}
		if interval == 0 {
			c.yamux.EnableKeepAlive = false
			c.yamux.KeepAliveInterval = DefaultKeepAlive // yamux wants one anyway
			return
		}
		c.yamux.EnableKeepAlive = true
		c.yamux.KeepAliveInterval = interval
	})
}

// WithStreamLimit bounds the streams open at once on one session
// (DefaultStreamLimit, 4096, by default). A Dial past the limit waits,
// within its context, for a stream of the session to be closed; a listener
// stops taking streams from a session past the limit, so its peer's opens
// wait, unacknowledged, in the accept backlog (WithAcceptBacklog), where a
// mux dialler's Dial waits for room. Both ends should allow what the
// application needs. The streams opened the other way (Back, Incoming)
// are bounded by n apart, so that neither way's streams can use up the
// room the other's need: a session holds at most n streams each way. Zero
// means no limit, leaving what one peer can make this end hold unbounded;
// a negative n makes Dial and Listen fail.
func WithStreamLimit(n int) Option {
	return option(func(c *config) {
		if n < 0 {
			c.Invalid("WithStreamLimit", n, "must not be negative")
			return
		}
		c.streamLimit = n
	})
}

// WithAcceptBacklog sets how many opened streams a session holds before
// they are accepted, and how many un-acknowledged opens a dialler allows
// itself before Dial waits. Both ends should use the same value: a server
// resets the streams that overflow its backlog. The listener's own queue of
// accepted-but-not-returned streams has the same size. It must be
// positive, or Dial and Listen fail.
func WithAcceptBacklog(n int) Option {
	return option(func(c *config) {
		if n < 1 {
			c.Invalid("WithAcceptBacklog", n, "must be positive")
			return
		}
		c.yamux.AcceptBacklog = n
	})
}

// WithStreamOpenTimeout sets how long an opened stream may wait for the
// peer's acknowledgement, which this package's listener sends as soon as
// the stream fits in its accept queue. When it passes yamux closes the
// whole session, every stream on it included, judging the peer dead; so it
// must be generous. Zero, the default, disables it and leaves dead peers to
// keepalive; a negative d makes Dial and Listen fail.
func WithStreamOpenTimeout(d time.Duration) Option {
	return option(func(c *config) {
		if d < 0 {
			c.Invalid("WithStreamOpenTimeout", d, "must not be negative")
			return
		}
		c.yamux.StreamOpenTimeout = d
	})
}

// WithStreamCloseTimeout sets how long a stream closed here waits for the
// peer to close its end. When it passes the stream is reset, which frees its
// buffers and makes the peer's Send and Recv fail (the peer loses what it
// had not yet read). A session that ends frees such streams with it, at
// once. Zero disables it, leaving half-closed streams until the session
// ends; a negative d makes Dial and Listen fail.
func WithStreamCloseTimeout(d time.Duration) Option {
	return option(func(c *config) {
		if d < 0 {
			c.Invalid("WithStreamCloseTimeout", d, "must not be negative")
			return
		}
		c.yamux.StreamCloseTimeout = d
	})
}

// WithWriteTimeout sets yamux's connection write timeout: how long one write
// may wait to reach the connection before it fails, and how long a
// keepalive ping waits for its answer. It must be positive, or Dial and
// Listen fail.
func WithWriteTimeout(d time.Duration) Option {
	return option(func(c *config) {
		if d <= 0 {
			c.Invalid("WithWriteTimeout", d, "must be positive")
			return
		}
		c.yamux.ConnectionWriteTimeout = d
	})
}

// WithStreamWindow sets the largest receive window of one stream, in bytes:
// how much a peer may send before the reader catches up. A larger window
// speeds bulk transfers over links with a long round trip, at the cost of
// up to that much memory per stream whose reader lags; a message larger
// than the window waits part way for the reader. By default the window is
// the frame limit (WithMaxFrameSize; 4 MiB by default) plus 64 KiB, so that
// any message the limit allows crosses in one window. The minimum is
// MinStreamWindow (256 KiB, yamux's own default), the maximum
// math.MaxUint32; outside those bounds Dial and Listen fail.
func WithStreamWindow(bytes int) Option {
	return option(func(c *config) {
		if bytes < MinStreamWindow || uint64(bytes) > math.MaxUint32 {
			c.Invalid("WithStreamWindow", bytes, fmt.Sprintf("must be between %d (yamux's minimum) and %d", MinStreamWindow, uint64(math.MaxUint32)))
			return
		}
		c.streamWin = int64(bytes)
	})
}

// WithDialer makes Dial open each session's connection with dial instead of
// a net.Dialer: to go through a proxy, bind a source address, or wrap the
// connection. TLS, when configured, runs over the connection it returns. A
// nil dial keeps the default.
func WithDialer(dial DialFunc) Option {
	return option(func(c *config) {
		if dial != nil {
			c.dial = dial
		}
	})
}

// errInvalid wraps a configuration problem yamux found, which the options
// did not, for Dial and Listen to return.
func errInvalid(err error) error {
	return fmt.Errorf("mux: invalid configuration: %w", err)
}
