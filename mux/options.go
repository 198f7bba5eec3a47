package mux

import (
	"context"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/zerodial/transport"
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
	// DefaultStreamWindow is the largest receive window of one stream, and
	// the smallest yamux accepts.
	DefaultStreamWindow = 256 << 10
)

// config holds the settings only this transport understands.
type config struct {
	// yamux is the template every session copies; its Logger is set per
	// session, never here, so the template is never handed to yamux.
	yamux       yamux.Config
	streamLimit int
	streamWin   int64
	dial        DialFunc
}

func defaultConfig() config {
	return config{
		yamux: yamux.Config{
			AcceptBacklog:          DefaultAcceptBacklog,
			EnableKeepAlive:        true,
			KeepAliveInterval:      DefaultKeepAlive,
			ConnectionWriteTimeout: DefaultWriteTimeout,
			StreamOpenTimeout:      DefaultStreamOpenTimeout,
			StreamCloseTimeout:     DefaultStreamCloseTimeout,
		},
		streamWin: DefaultStreamWindow,
		dial:      (&net.Dialer{}).DialContext,
	}
}

// validate reports the first setting yamux or this package would refuse, so
// that Dial and Listen fail with a clear message rather than misbehave.
func (c *config) validate() error {
	y := c.yamux
	switch {
	case c.yamux.ConnectionWriteTimeout <= 0:
		return fmt.Errorf("write timeout %v must be positive", c.yamux.ConnectionWriteTimeout)
	case c.yamux.KeepAliveInterval < 0:
		return fmt.Errorf("keepalive interval %v is negative", c.yamux.KeepAliveInterval)
	case c.yamux.StreamOpenTimeout < 0:
		return fmt.Errorf("stream open timeout %v is negative", c.yamux.StreamOpenTimeout)
	case c.yamux.StreamCloseTimeout < 0:
		return fmt.Errorf("stream close timeout %v is negative", c.yamux.StreamCloseTimeout)
	case c.streamLimit < 0:
		return fmt.Errorf("stream limit %d is negative", c.streamLimit)
	case c.streamWin > math.MaxUint32:
		return fmt.Errorf("stream window %d exceeds %d", c.streamWin, uint32(math.MaxUint32))
	case c.streamWin < DefaultStreamWindow:
		return fmt.Errorf("stream window %d is below yamux's minimum of %d", c.streamWin, DefaultStreamWindow)
	}
	// yamux checks the rest (the backlog, chiefly); it also wants exactly
	// one log destination, which every session gets.
	y.MaxStreamWindowSize = uint32(c.streamWin)
	y.Logger = discardLogger{}
	y.LogOutput = nil
	return yamux.VerifyConfig(&y)
}

// sessionConfig returns a fresh yamux configuration for one session. yamux
// keeps the pointer for the session's life, so sessions never share one.
func (c *config) sessionConfig(l yamux.Logger) *yamux.Config {
	y := c.yamux
	y.MaxStreamWindowSize = uint32(c.streamWin)
	y.Logger = l
	y.LogOutput = nil
	return &y
}

// DialFunc opens the connection a client session runs over. It has the
// signature of net.Dialer.DialContext; network is always "tcp".
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// muxOption is implemented by the options of this package. New finds them
// among the transport.Options by type assertion, so one list carries both.
type muxOption interface {
	transport.Option
	applyMux(*config)
}

type option func(*config)

// ApplyOption does nothing: the setting is not one of transport.Options.
func (option) ApplyOption(*transport.Options) {}

func (o option) applyMux(c *config) { o(c) }

var _ muxOption = option(nil)

// WithKeepAlive sets the interval between keepalive pings on every session.
// A peer that stops answering is noticed within the interval plus twice the
// write timeout (the ping's write and the wait for its answer), and the
// session is then closed: its streams fail and the next Dial reconnects.
// Zero turns keepalive off, which leaves a silent peer unnoticed until a
// write fails; a negative interval makes Dial and Listen fail.
func WithKeepAlive(interval time.Duration) transport.Option {
	return option(func(c *config) {
		if interval == 0 {
			c.yamux.EnableKeepAlive = false
			c.yamux.KeepAliveInterval = DefaultKeepAlive // yamux wants one anyway
			return
		}
		c.yamux.EnableKeepAlive = true
		c.yamux.KeepAliveInterval = interval
	})
}

// WithStreamLimit bounds the streams open at once on one session. A Dial
// past the limit waits, within its context, for a stream of the session to
// be closed; a listener stops taking streams from a session past the limit,
// so its peer's opens queue in the accept backlog. Zero (the default) means
// no limit.
func WithStreamLimit(n int) transport.Option {
	return option(func(c *config) { c.streamLimit = n })
}

// WithAcceptBacklog sets how many opened streams a session holds before
// they are accepted, and how many un-acknowledged opens a dialler allows
// itself before Dial waits. Both ends should use the same value: a server
// resets the streams that overflow its backlog. The listener's own queue of
// accepted-but-not-returned streams has the same size. It must be positive.
func WithAcceptBacklog(n int) transport.Option {
	return option(func(c *config) { c.yamux.AcceptBacklog = n })
}

// WithStreamOpenTimeout sets how long an opened stream may wait for the
// peer's acknowledgement, which this package's listener sends as soon as
// the stream fits in its accept queue. When it passes yamux closes the
// whole session, every stream on it included, judging the peer dead; so it
// must be generous. Zero, the default, disables it and leaves dead peers to
// keepalive.
func WithStreamOpenTimeout(d time.Duration) transport.Option {
	return option(func(c *config) { c.yamux.StreamOpenTimeout = d })
}

// WithStreamCloseTimeout sets how long a stream closed here waits for the
// peer to close its end. When it passes the stream is reset, which frees its
// buffers and makes the peer's Send and Recv fail (the peer loses what it
// had not yet read). Zero disables it, leaving half-closed streams until the
// session ends.
func WithStreamCloseTimeout(d time.Duration) transport.Option {
	return option(func(c *config) { c.yamux.StreamCloseTimeout = d })
}

// WithWriteTimeout sets yamux's connection write timeout: how long one write
// may wait to reach the connection before it fails, and how long a
// keepalive ping waits for its answer. A server's TLS handshake must also
// finish within it. It must be positive.
func WithWriteTimeout(d time.Duration) transport.Option {
	return option(func(c *config) { c.yamux.ConnectionWriteTimeout = d })
}

// WithStreamWindow sets the largest receive window of one stream, in bytes:
// how much a peer may send before the reader catches up. A larger window
// speeds bulk transfers over links with a long round trip, at the cost of
// up to that much memory per stream whose reader lags. The minimum, and the
// default, is 256 KiB.
func WithStreamWindow(bytes int) transport.Option {
	return option(func(c *config) { c.streamWin = int64(bytes) })
}

// WithDialer makes Dial open each session's connection with dial instead of
// a net.Dialer: to go through a proxy, bind a source address, or wrap the
// connection. TLS, when configured, runs over the connection it returns. A
// nil dial keeps the default.
func WithDialer(dial DialFunc) transport.Option {
	return option(func(c *config) {
		if dial != nil {
			c.dial = dial
		}
	})
}

// errInvalid wraps a configuration problem for Dial and Listen to return.
func errInvalid(err error) error {
	return fmt.Errorf("mux: invalid configuration: %w", err)
}
