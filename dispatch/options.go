package dispatch

import (
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/options"
	"github.com/zerodial/transport/internal/rpcwire"
)

// ServerOption configures NewServer. Options are checked when the Server
// first serves: Serve and Start report every invalid one at once.
type ServerOption interface{ applyServer(*serverOptions) }

// ClientOption configures Dial and NewClient, which report every invalid
// one at once.
type ClientOption interface{ applyClient(*clientOptions) }

// Option configures a Server and a Client alike.
type Option interface {
	ServerOption
	ClientOption
}

type serverOptions struct {
	interceptors       []Interceptor
	streamInterceptors []StreamInterceptor
	logger             *slog.Logger
	codecs             map[string]codec.Codec
	maxConnCalls       int
	maxConnBytes       int64
	replyTimeout       time.Duration
	idleTimeout        time.Duration
	streamWindow       int
	strict             bool             // WithStrictDecoding
	problems           options.Problems // invalid options, reported by Serve and Start
}

type serverOption func(*serverOptions)

func (f serverOption) applyServer(o *serverOptions) { f(o) }

// serverOptionList is ServerOptions': several options applied as one.
type serverOptionList []ServerOption

func (l serverOptionList) applyServer(o *serverOptions) {
	for _, opt := range l {
		if opt != nil {
			opt.applyServer(o)
		}
	}
}

// ServerOptions returns one option that applies opts in order, skipping nil
// ones, so that a package whose feature takes several of a Server's options
// (rpcdebug's, an interceptor of calls and one of streams) can offer it as
// one, and its users cannot install half of it.
func ServerOptions(opts ...ServerOption) ServerOption { return serverOptionList(opts) }

type clientOption func(*clientOptions)

func (f clientOption) applyClient(o *clientOptions) { f(o) }

// DefaultMaxCallsPerConn is how many calls one connection may have in
// flight at once unless WithMaxCallsPerConn says otherwise.
const DefaultMaxCallsPerConn = 4096

// WithMaxCallsPerConn bounds the calls one network connection may have in
// flight at once; a call beyond it is answered at once with
// CodeResourceExhausted. Each call holds a goroutine and its decoded
// arguments, so without a bound one peer could make the server hold as many
// as it cares to send. The shortcut, which no remote peer drives, has no
// such bound. n must be at least 1.
func WithMaxCallsPerConn(n int) ServerOption {
	return serverOption(func(o *serverOptions) {
		if n < 1 {
			o.problems.Invalid("WithMaxCallsPerConn", n, "must be at least 1")
			return
		}
		o.maxConnCalls = n
	})
}

// DefaultMaxBytesPerConn is how many bytes of requests and replies one
// connection may make the server hold at once unless WithMaxBytesPerConn
// says otherwise: 64 MiB.
const DefaultMaxBytesPerConn = 64 << 20

// WithMaxBytesPerConn bounds the bytes one network connection may make the
// server hold: the request bodies of its calls in flight (their decoded
// arguments are of the same order) and the replies waiting to be written
// to it, and what a stream's handler has not yet consumed. A call that
// would pass the bound is answered at once with CodeResourceExhausted, and
// a stream whose messages pass it ends with that code, unless it is the
// connection's only call, which is always admitted (the frame limit bounds
// it). Without it, WithMaxCallsPerConn
// alone lets a peer that stops reading make the server hold thousands of
// calls of up to the frame limit each. n must be at least 1.
func WithMaxBytesPerConn(n int64) ServerOption {
	return serverOption(func(o *serverOptions) {
		if n < 1 {
			o.problems.Invalid("WithMaxBytesPerConn", n, "must be at least 1")
			return
		}
		o.maxConnBytes = n
	})
}

// DefaultReplyTimeout is how long a reply may wait to be written unless
// WithReplyTimeout says otherwise.
const DefaultReplyTimeout = 10 * time.Second

// WithReplyTimeout bounds how long writing one reply may take, waiting for
// the connection included; when a reply has waited that long with no other
// reply written meanwhile, the server closes the connection, whose peer has
// stopped reading, and the calls on it end. Without a bound, such a peer
// would hold a goroutine and the reply of every call it made until it read
// them or went away. The bound is checked every quarter of d, so the
// connection goes between d and 5/4 d after the reply began to wait. 0
// turns the bound off; d must not be negative. It applies to network
// connections: the shortcut has no socket.
func WithReplyTimeout(d time.Duration) ServerOption {
	return serverOption(func(o *serverOptions) {
		if d < 0 {
			o.problems.Invalid("WithReplyTimeout", d, "must not be negative")
			return
		}
		o.replyTimeout = d
	})
}

// DefaultIdleTimeout is how long a network connection may stay silent, with
// no call in flight, unless WithIdleTimeout says otherwise.
const DefaultIdleTimeout = 5 * time.Minute

// WithIdleTimeout drops a network connection that has sent nothing for d
// while none of its calls is in flight — or that stopped half way through
// a message — as net/http's IdleTimeout does: a peer that connects and goes
// silent otherwise holds a goroutine, buffers and a file descriptor for
// ever. The connection goes after between d and 9/8 d of silence. 0 turns
// it off; d must not be negative.
func WithIdleTimeout(d time.Duration) ServerOption {
	return serverOption(func(o *serverOptions) {
		if d < 0 {
			o.problems.Invalid("WithIdleTimeout", d, "must not be negative")
			return
		}
		o.idleTimeout = d
	})
}

// interceptorsOption is WithInterceptors': one option for both ends.
type interceptorsOption []Interceptor

func (o interceptorsOption) applyServer(s *serverOptions) {
	s.interceptors = appendInterceptors(s.interceptors, o, &s.problems, "WithInterceptors")
}

func (o interceptorsOption) applyClient(c *clientOptions) {
	c.interceptors = appendInterceptors(c.interceptors, o, &c.problems, "WithInterceptors")
}

// appendInterceptors appends ics to a chain, refusing each nil one by its
// index: WithInterceptors and WithStreamInterceptors, whose interceptors
// are functions of two types.
func appendInterceptors[F any](to, ics []F, p *options.Problems, option string) []F {
	for i, ic := range ics {
		if v := reflect.ValueOf(ic); v.Kind() == reflect.Func && v.IsNil() {
			p.Refuse(option, fmt.Sprintf("interceptor %d is nil", i))
			continue
		}
		to = append(to, ic)
	}
	return to
}

// WithInterceptors appends interceptors to a chain, the first given
// outermost. On a Server they wrap every call it serves, on every path,
// around the handler; on a Client (Dial, NewClient) they wrap every call it
// makes, on every path, around the call itself — the context next is given
// is the one the call is made with, so a Client interceptor can add
// metadata (WithMetadata) or a deadline. On both ends CallInfoFrom(ctx)
// says which method is called and which path the call takes. A Client with
// no interceptors pays nothing for them.
func WithInterceptors(ics ...Interceptor) Option {
	return interceptorsOption(ics)
}

// loggerOption is WithLogger's: one option for both ends.
type loggerOption struct{ l *slog.Logger }

func (o loggerOption) applyServer(s *serverOptions) { s.logger = o.l }
func (o loggerOption) applyClient(c *clientOptions) { c.logger = o.l }

// WithLogger sends diagnostics to l: a Server's (handler panics with their
// stacks, connections closed for protocol errors, methods Register ignored,
// Accept failures), a Client's (connections that failed, and why — the cause
// behind an ErrShutdown — at Warn; a connection the server closed after its
// Drain notice, the end of a graceful Shutdown, at Debug; a Client of
// replicas' ejections and readmissions, with the replica and why, at
// Info). By default they are discarded, as they are for a nil l.
func WithLogger(l *slog.Logger) Option {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return loggerOption{l}
}

// DefaultStreamWindow is the receive window of each direction of a stream,
// in bytes of encoded messages, unless WithStreamWindow says otherwise:
// 256 KiB, as a mux stream's.
const DefaultStreamWindow = 256 << 10

// streamWindowOption is WithStreamWindow's: one option for both ends.
type streamWindowOption int

func (o streamWindowOption) applyServer(s *serverOptions) {
	if o.check(&s.problems) {
		s.streamWindow = int(o)
	}
}

func (o streamWindowOption) applyClient(c *clientOptions) {
	if o.check(&c.problems) {
		c.streamWindow = int(o)
	}
}

func (o streamWindowOption) check(p *options.Problems) bool {
	if o < 1 || o > rpcwire.MaxWindow {
		p.Invalid("WithStreamWindow", int(o), fmt.Sprintf("must be from 1 to %d", rpcwire.MaxWindow))
		return false
	}
	return true
}

// WithStreamWindow sets the receive window of every stream at this end, in
// bytes of encoded messages: how much the peer may send on one stream
// before this end's consumer has taken it. It is what bounds the memory a
// stream holds when its consumer is slower than its producer — a sender
// whose credit is spent waits — and, over a long round trip, what bounds a
// stream's throughput to about a window per round trip. A Server's applies
// to what callers send to its handlers; a Client's to what handlers send
// to it. One message larger than the window still goes when the sender
// has at most half the window outstanding, so any message within the frame
// limit passes. n must be from 1 to 1 GiB.
func WithStreamWindow(n int) Option { return streamWindowOption(n) }

// WithServerCodecs adds codecs a server accepts, beside msgpack, chosen per
// request by its Content-Type.
func WithServerCodecs(cs ...codec.Codec) ServerOption {
	return serverOption(func(o *serverOptions) {
		for i, c := range cs {
			if c == nil {
				o.problems.Refuse("WithServerCodecs", fmt.Sprintf("codec %d is nil", i))
				continue
			}
			o.codecs[c.Name()] = c
		}
	})
}

// WithStrictDecoding makes the Server refuse the arguments of a call that
// hold a field their type does not have — a misspelled "Qtty" beside Qty —
// with CodeInvalidArgument naming the field, where by default the field is
// ignored (so that callers may send fields a Server does not know yet).
// It applies on every path that decodes arguments: memory, tcp, mux, the
// shortcut's copy mode, HTTP through httpzerodial (JSON and msgpack), and
// ServeCodec and ServeConn with net/rpc/jsonrpc's codec (what other net/rpc
// codecs can do: ServeCodec's doc). The shortcut's direct mode decodes
// nothing: the handler gets the caller's own Go value, which cannot hold a
// field its type does not have, so the same Go call has the same outcome.
// A codec of WithServerCodecs is strict if it implements
// codec.StrictUnmarshaler (msgpack does), and decodes as always otherwise.
// The messages of streams are decoded as without it.
func WithStrictDecoding() ServerOption {
	return serverOption(func(o *serverOptions) { o.strict = true })
}

type clientOptions struct {
	interceptors       []Interceptor
	streamInterceptors []StreamInterceptor
	codec              codec.Codec
	codecSet           bool // WithCodec was given, which a Client over a net/rpc codec refuses
	shortcut           ShortcutMode
	logger             *slog.Logger
	streamWindow       int
	replicas           replicaOptions
	problems           options.Problems
}

// WithCodec selects the codec of the client's requests (msgpack by default).
// The server must accept it (WithServerCodecs).
func WithCodec(c codec.Codec) ClientOption {
	return clientOption(func(o *clientOptions) {
		if c == nil {
			o.problems.Refuse("WithCodec(nil)", "no codec")
			return
		}
		o.codec, o.codecSet = c, true
	})
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
	// the values are not measured against the frame limit (metadata is, as
	// on the network). The caller, for its part, does not
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
	return clientOption(func(o *clientOptions) {
		if mode < ShortcutOff || mode > ShortcutDirect {
			o.problems.Invalid("WithShortcut", int(mode), "no such mode")
			return
		}
		o.shortcut = mode
	})
}

// newServerOptions applies opts to the defaults; nil options are skipped.
func newServerOptions(opts []ServerOption) serverOptions {
	o := serverOptions{
		problems:     options.NewProblems("dispatch"),
		logger:       slog.New(slog.DiscardHandler),
		codecs:       map[string]codec.Codec{codec.Msgpack.Name(): codec.Msgpack},
		maxConnCalls: DefaultMaxCallsPerConn,
		maxConnBytes: DefaultMaxBytesPerConn,
		replyTimeout: DefaultReplyTimeout,
		idleTimeout:  DefaultIdleTimeout,
		streamWindow: DefaultStreamWindow,
	}
	for _, opt := range opts {
		if opt != nil {
			opt.applyServer(&o)
		}
	}
	return o
}

// newClientOptions applies opts to the defaults; nil options are skipped.
// The error joins every invalid option.
func newClientOptions(opts []ClientOption) (clientOptions, error) {
	o := clientOptions{codec: codec.Msgpack, logger: slog.New(slog.DiscardHandler), streamWindow: DefaultStreamWindow,
		replicas: defaultReplicaOptions(), problems: options.NewProblems("dispatch")}
	for _, opt := range opts {
		if opt != nil {
			opt.applyClient(&o)
		}
	}
	return o, o.problems.Err()
}
