package dispatch

import (
	"cmp"
	"context"
	"errors"
	"io"
	"reflect"
	"slices"
	"sync"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/flow"
)

// Calls of protocols that live outside this package (httpzerodial's HTTP,
// say): the exported side of the seam protocol.go describes. A protocol
// reads a call in its own format, describes it (IncomingCall) and
// hands it to Invoke or InvokeStream, which take it through the same core
// as every other path — the gate, the router and the shape rule, the
// interceptor chains, the panic rule and the error words — and then
// writes the answer in its own format. MethodInfo tells it what to decode.

// PathHTTP is the Path of a call that came in over HTTP (Connect, gRPC or
// gRPC-Web), through httpzerodial.
const PathHTTP Path = "http"

// MethodInfo describes a registered method, for a protocol that decodes
// its arguments itself and for a listing of what a Server answers.
type MethodInfo struct {
	// Name is the method's name, "Service.Method".
	Name string
	// Args and Reply are the types a unary method takes and fills (A and
	// R of Handle, however the method was registered); for a streaming
	// method, the types of the caller's messages and of the handler's (In
	// and Out of HandleStream).
	Args, Reply reflect.Type
	// Stream is set for a streaming method (HandleStream).
	Stream bool
	// Encoding says what the bytes of a method of raw bodies hold, when
	// its registration said (WithEncoding); nil otherwise.
	Encoding *Encoding
}

// Method describes the method registered under name ("Service.Method"),
// or reports false when there is none.
func (s *Server) Method(name string) (MethodInfo, bool) {
	m := s.routes.Load().methods[name]
	if m == nil {
		return MethodInfo{}, false
	}
	return m.info(), true
}

// MethodInfos describes every method registered, sorted by name.
func (s *Server) MethodInfos() []MethodInfo {
	ms := s.routes.Load().methods
	infos := make([]MethodInfo, 0, len(ms))
	for _, m := range ms {
		infos = append(infos, m.info())
	}
	slices.SortFunc(infos, func(a, b MethodInfo) int { return cmp.Compare(a.Name, b.Name) })
	return infos
}

func (m *method) info() MethodInfo {
	var enc *Encoding
	if m.encoding != nil {
		e := *m.encoding // the caller's to keep
		enc = &e
	}
	if m.stream != nil {
		return MethodInfo{Name: m.name, Args: m.stream.in, Reply: m.stream.out, Stream: true, Encoding: enc}
	}
	a, r := m.newPair()
	return MethodInfo{Name: m.name, Args: reflect.TypeOf(a).Elem(), Reply: reflect.TypeOf(r).Elem(), Encoding: enc}
}

// errStoppedForeign is what a call of a foreign protocol gets when the
// Server stops (Close) while it is in flight: the connection a network
// caller would see fail is the protocol's, which the Server cannot close.
var errStoppedForeign = &Error{Code: CodeUnavailable, Message: "dispatch: server closed while the call was in flight"}

// IncomingCall describes a call, or a stream, that a protocol of another
// package read, for Invoke and InvokeStream: what the handler and the
// interceptors are told of it, beside the deadline of the protocol's
// context. A field added to it later leaves every caller as it is.
type IncomingCall struct {
	// Info is the CallInfo the handler and the interceptors see
	// (CallInfoFrom): the method called, Info.Method, and where the call
	// came from; its Path says the protocol (PathHTTP).
	Info CallInfo
	// Metadata is the caller's (MetadataFrom), nil when it sent none. It
	// is copied: the protocol may reuse its map.
	Metadata Metadata
}

// Invoke runs a unary call that a protocol of another package read: the
// call of call.Info.Method, with the caller's metadata call.Metadata, the
// handler's context ending when ctx ends. decode is given a pointer to new
// arguments, of the method's Args type, to decode the request into (nil
// decode leaves them zero); an error from it refuses the call with
// CodeInvalidArgument (or, when it is an *Error, with its code) before the
// handler runs.
//
// The call is refused with CodeUnavailable once the Server's Shutdown or
// Close has begun, and with ctx's error when ctx has ended; a call in
// flight holds Shutdown until it returns. The handler runs on a Server
// worker, under the panic rule, with a context that carries ctx's
// deadline, call.Metadata (MetadataFrom), call.Info and the Server
// (ShuttingDown), and that ends when ctx ends, when the call returns, or
// when the Server closes (Close). Invoke returns when the handler does, or
// as soon as ctx ends or the Server closes, with that error: the handler
// may then go on, with values the protocol never sees again.
//
// It returns the reply, a pointer of the method's Reply type, and the
// reply metadata the handler set (SetReplyMetadata), even with an error;
// err is nil or an *Error, in the words every path uses.
func (s *Server) Invoke(ctx context.Context, call IncomingCall, decode func(args any) error) (reply any, replyMD Metadata, err error) {
	c, e := s.admitForeign(ctx, call, false)
	if e != nil {
		return nil, nil, e
	}
	c.args, c.reply = c.m.newPair()
	if e := c.decode(decode); e != nil {
		return nil, nil, e
	}
	s.work(c)
	select {
	case <-c.done:
	case <-ctx.Done():
		if !c.doneFirst() {
			c.cancel(ctx.Err())
			return nil, nil, ctxError(ctx)
		}
	case <-s.stopped.Signal():
		if !c.doneFirst() {
			c.cancel(context.Canceled)
			return nil, nil, errStoppedForeign
		}
	}
	if c.e != nil {
		return nil, c.md, c.e
	}
	return c.reply, c.md, nil
}

// IncomingStream is a protocol's end of a stream that InvokeStream serves:
// the caller's messages and the handler's. The handler's goroutine uses it,
// one Receive and one Send (or Ready) at a time, and only until
// InvokeStream returns.
type IncomingStream interface {
	// Receive decodes the caller's next message into m, a pointer to a
	// zero value of the method's Args type. It returns io.EOF once the
	// caller has closed its side; any other error ends the handler's
	// reading with that error (as an *Error with CodeInvalidArgument
	// unless it is an *Error already).
	Receive(m any) error
	// Send sends m, a pointer of the method's Reply type, to the caller.
	Send(m any) error
	// Ready tells the caller that the handler is ready
	// (ServerStream.Ready) before its first message: what the protocol
	// has for it (HTTP: the response headers). It is called at most once,
	// and before any Send; not at all when the handler sends a message or
	// returns first, since the protocol's first message or end says as
	// much. A failure to send it shows in the next Send, or in the
	// stream's end.
	Ready()
}

// StreamHeaderSender is an IncomingStream whose protocol sends a header
// before the stream's messages (HTTP's response headers, which a gRPC
// client's Header reads). SendHeader is given, once and before Ready or the
// first Send, the reply metadata the handler has set (SetReplyMetadata) by
// the time it says it is ready, nil when none; the whole reply metadata is
// still InvokeStream's answer at the end, for the protocol to send what it
// has not sent yet. A protocol without such a header need not implement it:
// the reply metadata then all goes with the end, as on the zerodial wire.
type StreamHeaderSender interface {
	IncomingStream
	SendHeader(md Metadata)
}

// InvokeStream runs a stream that a protocol of another package opened:
// the stream of call.Info.Method, whose messages go through end, under the
// rules of Invoke (admission, CallInfo, metadata, the handler's context
// and its end) and those of every stream (the stream interceptors, the
// panic rule). It returns once the handler has returned — after ending
// its context when ctx ends or the Server closes — so that end is never
// used afterwards, with what ends the stream: the handler's error (nil, or
// an *Error) and its reply metadata, for the protocol to send as the
// stream's end. When ctx ended first, the error is ctx's.
func (s *Server) InvokeStream(ctx context.Context, call IncomingCall, end IncomingStream) (replyMD Metadata, err error) {
	c, e := s.admitForeign(ctx, call, true)
	if e != nil {
		return nil, e
	}
	c.stream = &foreignEnd{call: c, end: end, in: c.m.stream.in}
	s.work(c)
	var why *Error
	select {
	case <-c.done:
	case <-ctx.Done():
		if !c.doneFirst() {
			why = ctxError(ctx)
			c.cancel(ctx.Err())
		}
	case <-s.stopped.Signal():
		if !c.doneFirst() {
			why = errStoppedForeign
			c.cancel(context.Canceled)
		}
	}
	<-c.done
	if why != nil {
		return c.md, why
	}
	return c.md, errOf(c.e)
}

// admitForeign enters the gate and routes the call of call.Info.Method, or
// returns why not; the caller leaves the gate when the call fails before
// its handler is started, and serveIncoming leaves it otherwise. The
// handler's context takes the call's description: call, and ctx's
// deadline.
func (s *Server) admitForeign(ctx context.Context, call IncomingCall, stream bool) (*foreignCall, *Error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	if !s.gate.enter() {
		return nil, errShuttingDown
	}
	m, e := s.route(call.Info.Method, stream)
	if e != nil {
		s.gate.leave()
		return nil, e
	}
	c := &foreignCall{srv: s, parent: ctx, m: m, done: make(chan struct{})}
	c.callDesc = incomingDesc(ctx, call, s, &c.from)
	return c, nil
}

// decode has the protocol decode the call's arguments; on failure, or if
// decode panics, the call leaves the gate it entered, never to run.
func (c *foreignCall) decode(decode func(args any) error) (e *Error) {
	if decode == nil {
		return nil // zero arguments
	}
	ok := false
	defer func() {
		if !ok {
			c.srv.gate.leave()
		}
	}()
	if err := decode(c.args); err != nil {
		return decodeError(c.m.name, err)
	}
	ok = true
	return nil
}

// StrictDecoding reports whether the Server was made WithStrictDecoding,
// for a protocol that decodes arguments itself (httpzerodial): it then
// refuses a field the arguments' type does not have, as every path does.
func (s *Server) StrictDecoding() bool { return s.opts.strict }

// foreignCall is a call or stream of a foreign protocol, and its handler's
// context: as serverCall, with the deadline of the protocol's context and
// its end, which Invoke and InvokeStream pass on (cancel).
type foreignCall struct {
	callCtx
	srv         *Server
	parent      context.Context
	from        connInfo // where the call came from, as the protocol said (IncomingCall.Info)
	m           *method
	args, reply any
	stream      *foreignEnd // nil for a unary call

	done chan struct{} // closed by answer, once e and md are set
	e    *Error
	md   Metadata
}

// doneFirst reports whether the call was answered, for a waiter that saw
// its context end at the same moment: the answer then wins.
func (c *foreignCall) doneFirst() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// run serves the call on a worker (task).
func (c *foreignCall) run() { c.srv.serveIncoming(c, c.m.name) }

// handle runs the handler (incoming).
func (c *foreignCall) handle() *Error {
	if c.stream != nil {
		e := c.srv.invokeStream(c, c.m, c.stream)
		c.stream.readyOnce.Do(noop) // no Ready once the handler has returned
		return e
	}
	return c.srv.invoke(c, c.m, c.args, c.reply)
}

// answer records the outcome for the waiting protocol (incoming).
func (c *foreignCall) answer(e *Error) {
	c.e, c.md = e, c.sealReply()
	c.cancel(context.Canceled)
	close(c.done)
}

func (c *foreignCall) String() string { return "dispatch.foreignCall" }

// gone returns the error of the handler's context when the protocol's
// context has ended (the caller is gone, its deadline passed), ending the
// handler's context first if InvokeStream has not yet: the protocol's end
// fails for that, and the handler must see why, as on every path.
func (c *foreignCall) gone() error {
	if err := c.parent.Err(); err != nil {
		c.cancel(err)
	}
	return c.Err()
}

// foreignEnd is the handler's end of a foreign protocol's stream
// (handlerEnd): each message of the caller is decoded by the protocol into
// one value of the method's In type, reused as ServerStream.Recv allows,
// and handed to the handler by pointer.
type foreignEnd struct {
	call      *foreignCall
	end       IncomingStream
	in        reflect.Type
	msg       reflect.Value // a *In, made by the first next
	readyOnce sync.Once     // end's Ready, once, or spent when the handler returns
}

func (f *foreignEnd) next() (flow.Item, error) {
	if err := f.call.Err(); err != nil {
		return flow.Item{}, toError(err)
	}
	if !f.msg.IsValid() {
		f.msg = reflect.New(f.in)
	} else {
		f.msg.Elem().SetZero()
	}
	if err := f.end.Receive(f.msg.Interface()); err != nil {
		if err == io.EOF {
			return flow.Item{}, io.EOF
		}
		if err := f.call.gone(); err != nil {
			return flow.Item{}, toError(err)
		}
		var e *Error
		if errors.As(err, &e) && e != nil {
			return flow.Item{}, e
		}
		return flow.Item{}, &Error{Code: CodeInvalidArgument, Message: "dispatch: decoding a message of " + f.call.m.name + ": " + err.Error()}
	}
	return flow.Item{Ptr: f.msg.Interface()}, nil
}

func (f *foreignEnd) send(m any) error {
	if err := f.call.Err(); err != nil {
		return err
	}
	f.readyOnce.Do(f.sendHeader) // the protocol's first message says as much
	if err := f.end.Send(m); err != nil {
		if cerr := f.call.gone(); cerr != nil {
			return cerr // the context's error, as on every path
		}
		return err
	}
	return nil
}

func (f *foreignEnd) done() {}

// ready calls the protocol's Ready once, unless a message has gone: a
// concurrent Send waits for it.
func (f *foreignEnd) ready() { f.readyOnce.Do(f.sendReady) }

func (f *foreignEnd) sendReady() {
	if f.call.Err() == nil {
		f.sendHeader()
		f.end.Ready()
	}
}

// sendHeader gives a protocol that sends a header (StreamHeaderSender) the
// reply metadata set so far.
func (f *foreignEnd) sendHeader() {
	if hs, ok := f.end.(StreamHeaderSender); ok {
		hs.SendHeader(f.call.replySoFar())
	}
}

// codec is never used: every message is handed over decoded.
func (f *foreignEnd) codec() codec.Codec { return codec.Msgpack }
