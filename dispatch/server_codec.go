package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"strconv"
	"sync"
)

// PathNetRPC is the Path of a call that goes through a net/rpc codec: on
// a Server, one it read through ServeConn or ServeCodec, from a client of
// the standard library's net/rpc, of net/rpc/jsonrpc, of HashiCorp's
// net-rpc-msgpackrpc; on a Client, one it made through NewCodecClient or
// DialCodec, to any net/rpc server.
const PathNetRPC Path = "netrpc"

// ServeCodec serves the calls of one net/rpc connection, read and answered
// through codec, until the codec fails to read a request (the client hung
// up, or sent what the codec cannot read); then it waits for the calls in
// flight, closes codec and returns — as net/rpc's Server.ServeCodec does.
// Any codec serves: gobrpc.NewServerCodec for the standard library's
// rpc.Dial clients, jsonrpc.NewServerCodec for JSON-RPC 1.0 clients,
// msgpackrpc's for HashiCorp's.
//
// Its calls take the Server's router, interceptor chain, panic rule and
// limits, as calls of zerodial's own wire do, with what net/rpc can carry:
//
//   - A handler's error, or any refusal, reaches the client as its Message
//     (rpc.ServerError on a net/rpc client): the same words a zerodial
//     client's *Error carries, without the Code and the details (ErrorDetail:
//     an error whose details are over MaxErrorDetailsSize, or cannot be
//     encoded, is sent as the CodeInternal error's words every path uses).
//     An error whose Message is
//     empty (which net/rpc would read as success) is sent as
//     "dispatch: error with code C and no message".
//   - No metadata and no deadline come from the client: a handler's context
//     has none, and ends when the call is answered, when the connection
//     ends (the client cannot have the reply), or when the Server closes.
//     CallInfo has Path PathNetRPC and, when codec has LocalAddr and
//     RemoteAddr methods (gobrpc's codecs over a net.Conn do), those
//     addresses.
//   - WithMaxCallsPerConn bounds the calls in flight, refused past it as on
//     the zerodial wire. WithMaxBytesPerConn, WithIdleTimeout and
//     WithReplyTimeout do not apply: the codec decodes a request straight
//     into the handler's arguments, and its reads and writes are its own; a
//     codec bounds the size of one message itself, or not (gobrpc's does,
//     jsonrpc's does not). A body the codec fails to read, over its bound
//     or not, is answered with the codec's error ("dispatch: decoding
//     arguments of M: ..."), and the connection goes on if the codec can
//     read on (gobrpc's cannot after a message over its bound: the next
//     header fails, and the connection ends).
//   - Shutdown: net/rpc has no notice of a server draining, so a call that
//     arrives once Shutdown has begun is answered with "dispatch: server is
//     shutting down", the calls in flight finish and are answered, and then
//     the connection is closed; a client sees its later calls fail with
//     rpc.ErrShutdown. A call is in flight once its request has wholly
//     arrived, header and body: Shutdown does not wait for a request part
//     way through arriving (a client that stopped after a header), whose
//     connection it closes with the others. Close closes the connection at
//     once, and the calls in flight get no answer.
//   - Closing: ServeCodec has only codec to end the connection with, so
//     Shutdown, Close and a failed write call codec.Close while codec may
//     be reading. gobrpc's and jsonrpc's codecs over a net.Conn allow that;
//     HashiCorp's msgpackrpc codec does not (its Close and its read share a
//     field unguarded, which the race detector reports): serve it with
//     ServeConn, which closes the connection instead.
//   - WithStrictDecoding: the codec decodes the arguments, so what it can
//     refuse is its own. net/rpc/jsonrpc's codec decodes them with
//     encoding/json, which ServeCodec has refuse unknown fields (as
//     json.Decoder.DisallowUnknownFields does); gob has no such switch
//     (it matches fields by name and drops the rest, by design), so
//     gobrpc's codec drops them; HashiCorp's msgpackrpc codec refuses
//     them when made over a handle with ErrorIfNoField set
//     (msgpackrpc.NewCodecFromHandle), the program's choice.
//
// Streams do not exist in net/rpc: a call of a streaming method is refused
// as on every path.
//
// Prefer ServeConn whenever you have the connection the codec is made
// over: it serves it the same way and applies those three limits too,
// which ServeCodec cannot (ServeConn's doc says why they matter).
func (s *Server) ServeCodec(codec rpc.ServerCodec) { s.serveCodec(codec, nil) }

// serveCodec is ServeCodec, and ServeConn when lc is the connection under
// codec with the wire's limits on it.
func (s *Server) serveCodec(codec rpc.ServerCodec, lc *limitedConn) {
	c := &codecConn{srv: s, codec: codec, limits: lc, calls: make(map[*codecCall]struct{}), strictJSON: strictJSONArgs(s, codec)}
	if a, ok := addrsOf(codec); ok {
		c.local, c.remote = a.LocalAddr(), a.RemoteAddr()
	}
	if a, ok := addrsOf(lc.rwc()); ok && c.remote == nil {
		// The codec has no addresses, or cannot see them under lc.
		c.local, c.remote = a.LocalAddr(), a.RemoteAddr()
	}
	c.peer = connInfo{srv: s, path: PathNetRPC, local: c.local, peer: c.remote}
	if !s.trackConn(c) {
		codec.Close()
		return
	}
	lc.watch(c)
	c.read()
	c.cancelAll()
	// Close waits for the connections, not for handlers that outlive
	// theirs: the connection leaves the Server before its calls are done.
	s.untrack(c)
	c.inflight.Wait()
	c.close()
	if lc != nil {
		codec.Close() // its reading is over: nothing else uses it now
	}
	lc.stop()
}

// addrs is what a connection, or a codec over one, may say of its ends.
type addrs interface {
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// addrsOf returns v's addresses, if it has them.
func addrsOf(v any) (addrs, bool) {
	a, ok := v.(addrs)
	return a, ok
}

// codecConn is one connection served through a net/rpc codec.
type codecConn struct {
	srv           *Server
	codec         rpc.ServerCodec
	local, remote net.Addr
	peer          connInfo // what its calls' CallInfo says of it
	// limits is the connection under codec when ServeConn serves it, with
	// the wire's limits on it; nil for ServeCodec, whose methods on it do
	// nothing.
	limits *limitedConn
	// strictJSON has the codec, net/rpc/jsonrpc's, decode arguments
	// through strictJSON (WithStrictDecoding).
	strictJSON bool

	sending   sync.Mutex // a codec writes one response at a time
	closeOnce sync.Once
	inflight  sync.WaitGroup

	mu    sync.Mutex
	calls map[*codecCall]struct{} // the calls in flight, to end their contexts
}

// read reads requests until the codec fails, and starts a call for each.
//
// A call is admitted — into the gate, which Shutdown waits for, and into
// calls, which keep the connection busy for the idle timeout — only once
// its request has wholly arrived, header and body, as on the wire, where a
// call is one frame: a peer that stops after a header, or trickles a body,
// has no call in flight, so the idle timeout closes its connection and
// Shutdown does not wait for it.
func (c *codecConn) read() {
	for {
		var req rpc.Request
		c.limits.begin()
		if err := c.readHeader(&req); err != nil {
			if tooLarge := c.limits.tooLarge(); tooLarge != nil {
				c.srv.opts.logger.Warn("dispatch: closing net/rpc connection: a request is too large", "remote", c.remote, "err", tooLarge)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				c.srv.opts.logger.Debug("dispatch: net/rpc connection ended", "remote", c.remote, "err", err)
			}
			return
		}
		m, e := c.srv.route(req.ServiceMethod, false)
		if e != nil {
			// The body must be read past, or the next header is misread.
			err := c.readBody(nil)
			c.limits.read()
			if c.srv.gate.closed() {
				e = errShuttingDown // first, as on the wire
			}
			c.respond(&req, nil, e)
			if err != nil {
				return // the next header cannot be found
			}
			continue
		}
		args, reply := m.newPair()
		var err error
		if c.strictJSON {
			err = c.readBody(&strictJSON{args})
		} else {
			err = c.readBody(args)
		}
		c.limits.read()
		call, e := c.start(&req, m, args, reply)
		if e != nil {
			// The codec said where the next header is, as below.
			c.respond(&req, nil, e)
			continue
		}
		if err != nil {
			c.refuse(call, argsError(req.ServiceMethod, err))
			continue
		}
		if e := c.limits.admit(c, call); e != nil {
			c.refuse(call, e)
			continue
		}
		c.srv.work(call)
	}
}

// refuse answers a call that was admitted, and then could not run, with e.
func (c *codecConn) refuse(call *codecCall, e *Error) {
	c.finish(call)
	c.respond(&rpc.Request{ServiceMethod: call.name, Seq: call.seq}, nil, e)
	c.srv.gate.leave()
}

// start admits the call of req, to m with args decoded and reply, or
// returns why not.
func (c *codecConn) start(req *rpc.Request, m *method, args, reply any) (*codecCall, *Error) {
	if !c.srv.gate.enter() {
		return nil, errShuttingDown
	}
	call := &codecCall{callCtx: callCtx{callDesc: callDesc{name: req.ServiceMethod, peer: &c.peer}}, conn: c, meth: m, seq: req.Seq, args: args, reply: reply}
	c.mu.Lock()
	if limit := c.srv.opts.maxConnCalls; len(c.calls) >= limit {
		c.mu.Unlock()
		c.srv.gate.leave()
		return nil, admissionRefusal("calls", int64(limit))
	}
	c.calls[call] = struct{}{}
	c.inflight.Add(1)
	c.mu.Unlock()
	return call, nil
}

// finish lets go of call: it is answered, or will never be.
func (c *codecConn) finish(call *codecCall) {
	c.mu.Lock()
	delete(c.calls, call)
	c.mu.Unlock()
	c.limits.release(call.size)
	call.cancel(context.Canceled)
	c.inflight.Done()
}

// cancelAll ends the contexts of the calls in flight: their client can no
// longer have a reply.
func (c *codecConn) cancelAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for call := range c.calls {
		call.cancel(context.Canceled)
	}
}

// respond writes the answer to req: reply, or e's Message.
func (c *codecConn) respond(req *rpc.Request, reply any, e *Error) {
	resp := rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq}
	if e != nil {
		resp.Error = e.Message
		if resp.Error == "" {
			resp.Error = "dispatch: error with code " + strconv.Quote(string(e.Code)) + " and no message"
		}
		reply = struct{}{} // as net/rpc's invalidRequest
	}
	c.sending.Lock()
	c.limits.replyBegin()
	err := c.codec.WriteResponse(&resp, reply)
	c.limits.replyEnd()
	c.sending.Unlock()
	if err != nil {
		// A codec whose write failed may have written half a response:
		// nothing after it can be read. net/rpc's gob codec closes itself.
		c.srv.opts.logger.Debug("dispatch: net/rpc response not written; closing the connection", "remote", c.remote, "method", req.ServiceMethod, "err", err)
		c.close()
	}
}

// readHeader and readBody call the codec, turning a panic in it into an
// error: a codec decoding what a hostile peer sent can panic (encoding/gob
// did, on a stream FuzzServerCodec made), and the read loop must not take
// the process down with it. The codec has lost its place, so its next read
// fails, or the connection ends.
func (c *codecConn) readHeader(req *rpc.Request) (err error) {
	defer recoverRead(&err)
	return c.codec.ReadRequestHeader(req)
}

func (c *codecConn) readBody(v any) (err error) {
	defer recoverRead(&err)
	return c.codec.ReadRequestBody(v)
}

// recoverRead, deferred, turns a panic of the codec into *err.
func recoverRead(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("dispatch: the net/rpc codec panicked reading: %v", r)
	}
}

// drain has nothing to tell a net/rpc client (servedConn).
func (c *codecConn) drain() <-chan struct{} { return closedChan }

// flushed returns at once: a response is written when respond returns,
// before its call leaves the gate (servedConn).
func (c *codecConn) flushed(context.Context) error { return nil }

// close ends the connection, once: the reader fails and ServeCodec ends
// (servedConn). It may run while the codec reads (Close, a failed write).
// Under ServeConn it closes the connection, which any goroutine may do, and
// serveCodec closes the codec once its reading is over; ServeCodec has only
// the codec to close, so the codec's Close must be safe beside its read.
func (c *codecConn) close() {
	c.closeOnce.Do(func() {
		if c.limits != nil {
			c.limits.conn.Close()
			return
		}
		c.codec.Close()
	})
}

// codecCall is a call read through a net/rpc codec, and its handler's
// context: as serverCall, with no deadline and no metadata (its
// description has only the method and the connection).
type codecCall struct {
	callCtx
	conn        *codecConn
	meth        *method
	seq         uint64
	args, reply any
	size        int64 // the bytes of its request, in ServeConn's count of the bytes in flight
}

// run serves the call on a worker (task).
func (c *codecCall) run() { c.conn.srv.serveIncoming(c, c.name) }

// handle runs the handler (incoming).
func (c *codecCall) handle() *Error { return c.conn.srv.invoke(c, c.meth, c.args, c.reply) }

// answer writes the reply, or e (incoming).
func (c *codecCall) answer(e *Error) {
	c.conn.respond(&rpc.Request{ServiceMethod: c.name, Seq: c.seq}, c.reply, e)
	c.conn.finish(c)
}

func (c *codecCall) String() string { return "dispatch.codecCall" }
