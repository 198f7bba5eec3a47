package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"

	"github.com/zerodial/transport"
)

// NewCodecClient returns a Client that calls through codec, a net/rpc
// client codec over a connection the program already has — for instance
// jsonrpc.NewClientCodec(conn), or gobrpc.NewClientCodec(conn) to call an
// rpc.ServeConn. The Client owns codec, and Close closes it, while its
// reader may be inside codec's read: gobrpc's and jsonrpc's codecs over a
// net.Conn allow that; HashiCorp's msgpackrpc codec does not (its Close
// and its read share a field unguarded, which the race detector reports),
// so give it to DialCodec, whose Client closes the connection it dialled
// and closes the codec only once nothing reads or writes through it. It
// has no address to dial again: once codec fails, its calls fail with
// ErrShutdown.
// The error joins every invalid or refused option; WithResolver is refused
// (a codec has one peer: use DialCodec).
//
// A Client over a net/rpc codec calls a server that has not moved to
// zerodial — the standard library's rpc.Server (gob), a JSON-RPC 1.0 server
// (net/rpc/jsonrpc), HashiCorp's msgpackrpc, or a dispatch Server's
// ServeCodec — with everything a Client brings: interceptors, replicas
// (WithResolver), the context rule, the nil rule, *Error with codes, and
// ErrShutdown for a failed connection. It is the Client's end of what
// Server.ServeCodec is on the Server's.
//
// What net/rpc cannot carry is left out, and said so here:
//
//   - No metadata: metadata set with WithMetadata is not sent, and
//     CaptureReplyMetadata receives none (nil) when the reply arrives.
//   - No deadline: the caller's context bounds the call on this end — when
//     it ends, Call returns at once with its *Error — but the server is not
//     told, and its handler runs on; its late reply is read and dropped,
//     and nothing the caller owns is touched after Call has returned.
//   - A write cannot be taken back: a codec holds the arguments until its
//     WriteRequest returns, so a call cannot return before. When the
//     caller's context ends while the request is being written (to a
//     server that stopped reading), DialCodec's Client sets a write
//     deadline on the connection it dialled, frame.InterruptGrace (100 ms)
//     ahead, so that a write the server is taking completes: a write that
//     does not returns then, the call returns the context's *Error, and if the request
//     was cut short the connection ends (the calls in flight on it fail
//     with ErrShutdown; the next call dials again). NewCodecClient's
//     Client has no connection to do this with, unless codec has a
//     SetWriteDeadline method: such a call returns when the write does, as
//     with net/rpc; Close ends it.
//   - No streams: OpenStream and CallStream fail with an *Error of
//     CodeUnimplemented.
//   - Codes: a net/rpc server answers a failure as text (rpc.ServerError),
//     so an *Error from it has no details.
//     The text is the *Error's Message, and its Code is CodeUnknown, except
//     for words whose code is known: "dispatch: server is shutting down"
//     (a dispatch Server's Shutdown) is CodeUnavailable; "dispatch: too
//     many ..." (its WithMaxCallsPerConn refusal) CodeResourceExhausted;
//     net/rpc's "rpc: can't find service ..." and "rpc: can't find method
//     ..." CodeNotFound, as on zerodial's wire; "rpc: service/method request
//     ill-formed: ..." and "dispatch: decoding arguments of ..."
//     CodeInvalidArgument, as is a unary call of a dispatch streaming
//     method; "dispatch: panic in ..." CodeInternal, as are a handler
//     that ended its goroutine and a reply that could not be encoded; and
//     "dispatch: error with code "C" and no message" (ServeCodec's words for
//     an *Error with no message) is an *Error of Code C and no Message. So
//     a Client of replicas retries on another a call refused by a Server
//     shutting down or at its limit, as it does on zerodial's wire.
//   - CallInfo: the Path of its calls is PathNetRPC, and RemoteAddr the
//     address dialled (DialCodec: its Network is the network dialled) or
//     the codec's RemoteAddr, if it has such a method (NewCodecClient).
//
// A failure of the connection is not an *Error, as on every path: a dial
// that fails says what was dialled and why, and a connection that fails
// matches ErrShutdown, its text saying why (the server closed the
// connection, a response to no call). A request the codec fails to
// write (arguments its encoding refuses, such as a gob of a type with no
// exported fields) ends the connection too, since the codec may have
// written part of it.
//
// Options: WithInterceptors (the unary ones; a net/rpc server has no
// streams), WithLogger, and with DialCodec the replica options apply.
// WithShortcut and WithCodec are refused with an error naming them: the
// server is not a dispatch Server of this process, and the codec given
// encodes the calls. WithStreamWindow has no effect.
func NewCodecClient(codec rpc.ClientCodec, opts ...ClientOption) (*Client, error) {
	if codec == nil {
		return nil, errors.New("dispatch: NewCodecClient with a nil rpc.ClientCodec")
	}
	o, err := codecClientOptions("NewCodecClient", opts)
	if err == nil && o.replicas.resolver != nil {
		err = errors.New("dispatch: NewCodecClient with WithResolver: a codec has one peer; use DialCodec")
	}
	if err != nil {
		return nil, err
	}
	var remote net.Addr
	if a, ok := codec.(interface{ RemoteAddr() net.Addr }); ok {
		remote = a.RemoteAddr()
	}
	c := &Client{opts: o, ctype: o.codec.Name(), limit: transport.DefaultMaxFrameSize, netPath: PathNetRPC, remote: remote}
	if remote != nil {
		c.addr = remote.String()
	}
	d, _ := codec.(writeDeadliner)
	c.conn = newCodecClientConn(codec, nil, d, remote, o.logger)
	return c, nil
}

// DialCodec returns a Client that calls the net/rpc server at addr: it
// dials network and addr with dial, and speaks newCodec's encoding over the
// connection — jsonrpc.NewClientCodec for a JSON-RPC server,
// msgpackrpc.NewClientCodec for HashiCorp's, or gobrpc.ClientCodecFunc()
// to call the standard library's rpc.Server (rpc.ServeConn, rpc.Accept).
// dial has the shape of net.Dialer's DialContext, so that a tls.Dialer's
// (TLS, with its certificates), a proxy's or a test's can be given as they
// are; nil dials with a net.Dialer. The Client owns the connections it
// dials: it ends one by closing it, and closes its codec once nothing
// reads or writes through the codec, so any codec serves, msgpackrpc's
// too (see NewCodecClient). DialCodec connects now, so that an
// address nobody serves fails here, as with rpc.Dial; a connection that
// fails later is dialled again by the next call, as Dial's is. With
// WithResolver, addr is the target resolved, and each replica is a Client
// over the codec of one address, dialled when first called.
//
// NewCodecClient's doc says what a Client over a codec carries, what it
// cannot, and which options apply. The error joins every invalid or
// refused option.
func DialCodec(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), network, addr string, newCodec func(io.ReadWriteCloser) rpc.ClientCodec, opts ...ClientOption) (*Client, error) {
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	if newCodec == nil {
		return nil, errors.New("dispatch: DialCodec with a nil newCodec")
	}
	o, err := codecClientOptions("DialCodec", opts)
	if err != nil {
		return nil, err
	}
	if dial == nil {
		dial = new(net.Dialer).DialContext
	}
	d := &codecDialer{netDial: dial, network: network, newCodec: newCodec, log: o.logger}
	if o.replicas.resolver != nil {
		return dialReplicas(ctx, d, addr, o)
	}
	if err := targetError("DialCodec", addr); err != nil {
		return nil, err
	}
	c := newAddrClient(d, addr, o, nil)
	if _, err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// codecClientOptions applies opts for fn, a constructor of a Client over a
// net/rpc codec, refusing those that cannot apply to one.
func codecClientOptions(fn string, opts []ClientOption) (clientOptions, error) {
	o, err := newClientOptions(opts)
	errs := []error{err}
	if o.shortcut != ShortcutOff {
		errs = append(errs, fmt.Errorf("dispatch: %s with WithShortcut(%v): a net/rpc server is not a dispatch Server of this process", fn, o.shortcut))
	}
	if o.codecSet {
		errs = append(errs, fmt.Errorf("dispatch: %s with WithCodec: the rpc.ClientCodec encodes the calls", fn))
	}
	return o, errors.Join(errs...)
}

// codecDialer dials the connections of a Client over a net/rpc codec
// (DialCodec).
type codecDialer struct {
	netDial  func(ctx context.Context, network, addr string) (net.Conn, error)
	network  string
	newCodec func(io.ReadWriteCloser) rpc.ClientCodec
	log      *slog.Logger
}

func (d *codecDialer) dial(ctx context.Context, addr string) (callConn, error) {
	conn, err := d.netDial(ctx, d.network, addr)
	if err != nil {
		return nil, err
	}
	if conn == nil {
		return nil, errors.New("dispatch: DialCodec's dial returned neither a connection nor an error")
	}
	codec := d.newCodec(conn)
	if codec == nil {
		conn.Close()
		return nil, errors.New("dispatch: DialCodec's newCodec returned a nil rpc.ClientCodec")
	}
	return newCodecClientConn(codec, conn, conn, conn.RemoteAddr(), d.log), nil
}

// String is the network dialled: the Network of the Client's RemoteAddr.
func (d *codecDialer) String() string { return d.network }

func (d *codecDialer) path() Path { return PathNetRPC }

// shortcut: a net/rpc server is never a dispatch Server of this process.
func (d *codecDialer) shortcut(string) (regKey, transport.Wire, bool) {
	return regKey{}, transport.Wire{}, false
}

func (d *codecDialer) maxFrame() int { return transport.DefaultMaxFrameSize }
