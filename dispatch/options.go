package dispatch

import (
	"log/slog"

	"github.com/zerodial/transport/codec"
)

// ServerOption configures NewServer.
type ServerOption func(*serverOptions)

type serverOptions struct {
	interceptors []Interceptor
	logger       *slog.Logger
	codecs       map[string]codec.Codec
	maxConnCalls int
}

// DefaultMaxCallsPerConn is how many calls one connection may have in
// flight at once unless WithMaxCallsPerConn says otherwise.
const DefaultMaxCallsPerConn = 4096

// WithMaxCallsPerConn bounds the calls one network connection may have in
// flight at once; a call beyond it is answered at once with CodeUnavailable.
// Each call holds a goroutine and its decoded arguments, so without a bound
// one peer could make the server hold as many as it cares to send. The
// shortcut, which no remote peer drives, has no such bound. Values below 1
// keep the default.
func WithMaxCallsPerConn(n int) ServerOption {
	return func(o *serverOptions) {
		if n > 0 {
			o.maxConnCalls = n
		}
	}
}

// WithInterceptors appends interceptors to the server's chain. They wrap
// every call on every path, the first given outermost.
func WithInterceptors(ics ...Interceptor) ServerOption {
	return func(o *serverOptions) {
		for _, ic := range ics {
			if ic != nil {
				o.interceptors = append(o.interceptors, ic)
			}
		}
	}
}

// WithServerLogger sends the server's diagnostics (handler panics with their
// stacks, connections closed for protocol errors) to l. By default they are
// discarded.
func WithServerLogger(l *slog.Logger) ServerOption {
	return func(o *serverOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithServerCodecs adds codecs a server accepts, beside msgpack, chosen per
// request by its Content-Type.
func WithServerCodecs(cs ...codec.Codec) ServerOption {
	return func(o *serverOptions) {
		for _, c := range cs {
			if c != nil {
				o.codecs[c.Name()] = c
			}
		}
	}
}

// ClientOption configures Dial.
type ClientOption func(*clientOptions)

type clientOptions struct {
	codec    codec.Codec
	shortcut ShortcutMode
}

// WithCodec selects the codec of the client's requests (msgpack by default).
// The server must accept it (WithServerCodecs).
func WithCodec(c codec.Codec) ClientOption {
	return func(o *clientOptions) {
		if c != nil {
			o.codec = c
		}
	}
}

// ShortcutMode says how a Client calls a Server of this process.
type ShortcutMode int

const (
	// ShortcutOff always uses the transport.
	ShortcutOff ShortcutMode = iota
	// ShortcutCopy calls the Server's router directly, with no socket; the
	// codec runs once each way, so caller and handler share no memory.
	ShortcutCopy
	// ShortcutDirect calls the Server's router directly with no codec: the
	// handler receives the caller's args (a pointer to them when the caller
	// passed a pointer), and *reply is zeroed and written in place. The
	// caller must not touch args or reply until the call returns, and the
	// handler must not keep them, or anything they point to, after it
	// returns. Frame limits are not checked, since nothing is encoded.
	// Where the caller's types are not the handler's, the call falls back
	// to ShortcutCopy, which decodes exactly as the network would.
	ShortcutDirect
)

func (m ShortcutMode) String() string {
	switch m {
	case ShortcutOff:
		return "off"
	case ShortcutCopy:
		return "copy"
	case ShortcutDirect:
		return "direct"
	}
	return "ShortcutMode(?)"
}

// WithShortcut makes the Client call a Server of this process directly when
// the dialled address is one it serves, in the given mode. When no Server of
// this process serves the address — or the one that did has stopped — the
// Client uses the transport exactly as without the option.
func WithShortcut(mode ShortcutMode) ClientOption {
	return func(o *clientOptions) { o.shortcut = mode }
}
