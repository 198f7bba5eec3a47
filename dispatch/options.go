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
// flight at once; a call beyond it is answered at once with
// CodeResourceExhausted.
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
	// codec runs once each way, so caller and handler share no memory, and
	// the frame limits apply as on the network. It is the safe choice for
	// any service, written for net/rpc or not.
	ShortcutCopy
	// ShortcutDirect is ShortcutCopy, except for the methods whose author
	// promised to borrow their arguments (Borrows, which states the
	// contract): those receive the caller's own values with no codec, and
	// frame limits are not checked. The caller, for its part, does not
	// touch args or reply until Call returns — as with any synchronous
	// call. Every other method runs exactly as with ShortcutCopy.
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
// the dialled address is one it serves, in the given mode. The Server must be
// serving a listener at that address (Serve or Start), and the listener must
// accept the Client's transport as the network would (transport.Wire: the
// same protocol, TLS on both ends or neither, a client certificate where one
// is required). Otherwise — or once the Server stops serving the address —
// the Client uses the transport exactly as without the option, and meets
// whatever the network says.
//
// On the shortcut as on the network, the caller's context bounds the call:
// when it ends, Call returns, whatever the handler is doing, and the
// handler's context ends. A call whose context can end therefore runs its
// handler on one of the Server's goroutines while the caller waits; a call
// whose context cannot (ctx.Done() == nil) runs it on the caller's.
func WithShortcut(mode ShortcutMode) ClientOption {
	return func(o *clientOptions) { o.shortcut = mode }
}
