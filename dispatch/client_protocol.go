package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
)

// Clients over protocols that live outside this package (httpzerodial's
// HTTP client): the exported side of the seam client_dialer.go describes,
// as foreign.go is on the Server's. The protocol makes the connections and
// carries each call and stream; the Client keeps everything else — the
// interceptor chains, CallInfo, the nil and context rules, the reply
// zeroed, reply metadata captured, replicas with their balancing, ejection
// and retries — so that a call over it is made as over any path.

// Protocol makes the connections of a Client made by DialProtocol: what a
// Transport is to Dial, for a protocol of another package.
type Protocol interface {
	// Connect returns a connection to addr, within ctx. The Client calls
	// it when it has no live connection: on DialProtocol, and after the
	// last one failed (ProtocolConn.Err). An error that matches a
	// *net.OpError whose Op is "dial" says that nothing was sent, as does
	// any error of Connect: a Client of replicas then tries another.
	Connect(ctx context.Context, addr string) (ProtocolConn, error)
	// String names what the Protocol speaks ("http"): a Dial's error says
	// it, and it is the Network of the Client's RemoteAddr.
	String() string
	// Path is the Path of the calls made over its connections (CallInfo).
	Path() Path
	// Codec is the codec the connections' stream messages are in: the
	// Client decodes what ProtocolStream.Receive returns with it.
	Codec() codec.Codec
}

// ProtocolConn is one connection of a Protocol: the calls and streams of
// a Client go over it, many at once, from many goroutines. The Client has
// applied the nil rule, zeroed the reply and run its interceptors before a
// call gets here, and decodes the reply itself; what a connection must do
// is carry the call and say how it ended:
//
//   - an *Error for what the server answered (its code, message and
//     details; the code of a deadline or cancellation the server saw
//     included);
//   - any other error for a failure of its own (the request could not be
//     sent, the response could not be read), which the Client reports as
//     the connection's failure, naming the call; an error matching a
//     *net.OpError whose Op is "dial" says that nothing was sent;
//   - and it returns as soon as ctx ends, whatever it is doing, reading
//     args no more: the Client then returns ctx's error. ctx carries the deadline to send to the server.
//
// The bytes of a reply and of a stream's messages are in the Protocol's
// Codec, which the Client decodes them with, so that a reply that does not
// fit the caller's type fails as on every path.
type ProtocolConn interface {
	// Call calls method ("Service.Method") with args, which it encodes
	// in the Protocol's Codec, and returns the reply's bytes in that
	// codec, which the Client decodes into the caller's reply (empty: the
	// zero value) and which the connection does not touch again. md is
	// the caller's metadata (WithMetadata), nil when there is none. It
	// returns the reply metadata the handler set (SetReplyMetadata), with
	// an error too when the server sent it.
	Call(ctx context.Context, method string, md Metadata, args any) (reply []byte, replyMD Metadata, err error)
	// OpenStream opens a stream to method, with the caller's metadata md;
	// ctx bounds the whole stream. It may return before the server has
	// answered: what the server says comes from Receive.
	OpenStream(ctx context.Context, method string, md Metadata) (ProtocolStream, error)
	// Err reports why the connection can carry no more calls, or nil
	// while it can: the Client connects again when it is not nil.
	Err() error
	// Close ends the connection: the calls and streams in flight on it
	// end. It returns once nothing of the connection is left running.
	Close()
}

// ProtocolStream is the caller's end of a stream a ProtocolConn opened.
// Send and CloseSend are called from one goroutine, Receive from one
// (perhaps another), Close from any, at any time, more than once.
type ProtocolStream interface {
	// Send sends m, a non-nil pointer to a message. It returns io.EOF
	// when the stream has ended and the reason is Receive's to say.
	Send(m any) error
	// CloseSend says the caller sends no more.
	CloseSend() error
	// Receive returns the handler's next message in the Protocol's Codec,
	// valid until the next Receive or Close. After the last it returns
	// io.EOF when the handler succeeded, or why the stream ended, as
	// ProtocolConn.Call does.
	Receive() ([]byte, error)
	// ReplyMetadata is the handler's reply metadata (SetReplyMetadata),
	// once Receive has returned an error.
	ReplyMetadata() Metadata
	// Close ends the stream if it has not ended (the handler's context
	// ends) and lets go of what it holds.
	Close()
}

// DialProtocol returns a Client of addr over p: every call and stream of
// the Client goes over p's connections, with the Client's interceptors,
// CallInfo (whose Path is p.Path()), metadata, deadlines and error rules,
// as over any path. DialProtocol connects now, so that an address p cannot
// reach fails here. With WithResolver, addr is the target resolved, and
// each replica is a Client over p of one address, connected when first
// called. The Client owns the connections p makes, and Close closes them.
//
// WithShortcut is refused (a protocol of another package cannot reach a
// Server of this process but through its own connections), and so is
// WithCodec: p's codec encodes the calls. The error joins every invalid or
// refused option.
func DialProtocol(ctx context.Context, p Protocol, addr string, opts ...ClientOption) (*Client, error) {
	if ctx == nil {
		panic("dispatch: nil Context")
	}
	if p == nil {
		return nil, errors.New("dispatch: DialProtocol with a nil Protocol")
	}
	o, err := newClientOptions(opts)
	errs := []error{err}
	if o.shortcut != ShortcutOff {
		errs = append(errs, fmt.Errorf("dispatch: DialProtocol over %s with WithShortcut(%v): the shortcut reaches a Server of this process without a connection, which %s has not", p, o.shortcut, p))
	}
	if o.codecSet {
		errs = append(errs, fmt.Errorf("dispatch: DialProtocol over %s with WithCodec: the Protocol's codec (%s) encodes the calls", p, p.Codec().Name()))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o.codec = p.Codec()
	d := &protocolDialer{p: p}
	if o.replicas.resolver != nil {
		return dialReplicas(ctx, d, addr, o)
	}
	if err := targetError("DialProtocol", addr); err != nil {
		return nil, err
	}
	c := newAddrClient(d, addr, o, nil)
	if _, err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// protocolDialer is the connDialer of a Protocol.
type protocolDialer struct{ p Protocol }

func (d *protocolDialer) dial(ctx context.Context, addr string) (callConn, error) {
	pc, err := d.p.Connect(ctx, addr)
	if err != nil {
		return nil, err
	}
	if pc == nil {
		return nil, fmt.Errorf("dispatch: %s's Connect returned neither a connection nor an error", d.p)
	}
	return &protocolConn{pc: pc, path: d.p.Path(), codec: d.p.Codec()}, nil
}

func (d *protocolDialer) String() string { return d.p.String() }

func (d *protocolDialer) path() Path { return d.p.Path() }

// shortcut: DialProtocol refuses WithShortcut.
func (d *protocolDialer) shortcut(string) (regKey, transport.Wire, bool) {
	return regKey{}, transport.Wire{}, false
}

func (d *protocolDialer) maxFrame() int { return transport.DefaultMaxFrameSize }

// protocolConn is a ProtocolConn as a callConn.
type protocolConn struct {
	pc    ProtocolConn
	path  Path
	codec codec.Codec
}

func (c *protocolConn) call(ctx context.Context, name string, args, reply any) error {
	b, md, err := c.pc.Call(ctx, name, outgoing(ctx), args)
	if ctx.Err() != nil {
		return ctxError(ctx) // the caller's context ended first, as on every path
	}
	if e, ok := err.(*Error); ok {
		capturesOf(ctx).deliver(md)
		return e
	}
	if err != nil {
		return protocolFailure(err)
	}
	capturesOf(ctx).deliver(md)
	if len(b) > 0 {
		if err := c.codec.Unmarshal(b, reply); err != nil {
			zero(reply)
			return decodeReplyError(name, err)
		}
	}
	return nil
}

// protocolFailure is the error of a call or stream that err, a failure of
// a protocol's own, ended: a dialError when nothing was sent, the
// connection's failure otherwise.
func protocolFailure(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return &dialError{err}
	}
	return connFailed(err)
}

func (c *protocolConn) openStream(ctx context.Context, name string, _ int, _ bool) (callerEnd, error) {
	ps, err := c.pc.OpenStream(ctx, name, outgoing(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx)
		}
		if _, ok := err.(*Error); ok {
			return failedStream(ctx, err), nil
		}
		return nil, protocolFailure(err)
	}
	return &protocolStream{ps: ps, ctx: ctx, name: name, c: c, capture: capturesOf(ctx)}, nil
}

func (c *protocolConn) failure() error { return c.pc.Err() }

func (c *protocolConn) close() { c.pc.Close() }

// protocolStream is a ProtocolStream as a callerEnd.
type protocolStream struct {
	ps      ProtocolStream
	ctx     context.Context
	name    string
	c       *protocolConn
	capture *capture

	mu      sync.Mutex
	end     error // why the stream ended, once Receive said so (io.EOF: the handler succeeded)
	hasEnd  bool
	closed  bool
	sendEnd bool
	// peerEnded: a Send found the stream ended by the server, whose end
	// Receive has still to say.
	peerEnded bool
}

func (s *protocolStream) send(m any) error {
	s.mu.Lock()
	closed, end, hasEnd, sendEnd := s.closed, s.end, s.hasEnd, s.sendEnd
	s.mu.Unlock()
	switch {
	case closed || sendEnd:
		return ErrStreamDone
	case hasEnd && end != io.EOF:
		return end
	case hasEnd:
		return ErrStreamDone
	}
	err := s.ps.Send(m)
	if err == nil {
		return nil
	}
	if s.ctx.Err() != nil {
		return ctxError(s.ctx)
	}
	if err == io.EOF {
		// The handler has ended: its error, when Receive has told it, is
		// what Send fails with.
		s.mu.Lock()
		s.peerEnded = true
		end, hasEnd = s.end, s.hasEnd
		s.mu.Unlock()
		if hasEnd && end != io.EOF {
			return end
		}
		return ErrStreamDone
	}
	if _, ok := err.(*Error); ok {
		return err
	}
	return protocolFailure(err)
}

func (s *protocolStream) closeSend() error {
	s.mu.Lock()
	if s.closed || s.sendEnd {
		s.mu.Unlock()
		return nil
	}
	s.sendEnd = true
	s.mu.Unlock()
	if err := s.ps.CloseSend(); err != nil && err != io.EOF {
		if s.ctx.Err() != nil {
			return ctxError(s.ctx)
		}
		return protocolFailure(err)
	}
	return nil
}

func (s *protocolStream) next() (flow.Item, error) {
	s.mu.Lock()
	if s.hasEnd || s.closed {
		end := s.end
		if s.closed && !s.hasEnd {
			end = ErrStreamDone
		}
		s.mu.Unlock()
		return flow.Item{}, end
	}
	s.mu.Unlock()
	b, err := s.ps.Receive()
	if err == nil {
		return flow.Item{Body: b}, nil
	}
	if s.ctx.Err() != nil {
		err = ctxError(s.ctx)
	} else if _, ok := err.(*Error); !ok && err != io.EOF {
		err = protocolFailure(err)
	}
	s.mu.Lock()
	if !s.hasEnd {
		s.hasEnd, s.end = true, err
		if s.capture != nil && !s.closed {
			s.capture.deliver(s.ps.ReplyMetadata())
		}
	}
	err = s.end
	s.mu.Unlock()
	return flow.Item{}, err
}

func (s *protocolStream) done() {}

func (s *protocolStream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.ps.Close()
}

func (s *protocolStream) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hasEnd || s.peerEnded
}

func (s *protocolStream) codec() codec.Codec { return s.c.codec }

func (s *protocolStream) named(err error) error { return callError(s.ctx, s.name, s.c.path, err) }
