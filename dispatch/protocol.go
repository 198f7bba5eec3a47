package dispatch

import "context"

// The seam between the protocol-neutral core of a Server and the protocols
// that carry calls to it. The core is the router and the interceptor chain
// (router.go), the panic rule, the error words, the limits of a method's
// shape and the lifecycle (the gate, Shutdown and Close). A protocol reads
// a call in its own format and gives it to the core through the three
// pieces below, after entering the gate (errShuttingDown when it is
// closed) and routing the call (Server.route); it writes the answer in its
// own format. The zerodial wire (server_conn.go, server_call.go,
// stream_server.go) is one; the shortcut calls the core without a
// connection (shortcut.go). On the Client's side, the core is Client (the
// interceptor chain, the shortcut, replicas, the nil and context rules),
// and a protocol is a callConn.

// incoming is a call or stream that has come in on a connection, as
// the core runs it: it is the handler's context, handle runs the handler
// (Server.invoke or Server.invokeStream), and answer writes the outcome in
// the protocol's format.
type incoming interface {
	context.Context
	handle() *Error
	answer(e *Error)
}

// serveIncoming runs the handler of call, of the method called name, and
// has it answered exactly once, even when the handler ends its goroutine
// (runtime.Goexit, as t.FailNow does); then it leaves the gate, which the
// protocol entered before routing the call.
func (s *Server) serveIncoming(call incoming, name string) {
	defer s.gate.leave()
	var e *Error
	returned := false
	// Deferred, so that a handler that ends its goroutine still gets its
	// caller an answer.
	defer func() {
		if !returned {
			e = goexitError(name)
		}
		call.answer(e)
	}()
	e = call.handle()
	returned = true
}

// servedConn is a connection a Server serves, whatever its protocol: what
// Shutdown and Close need of it.
type servedConn interface {
	// drain tells the peer that the Server is shutting down, and returns a
	// channel closed once the peer has promised to send no new call, or the
	// connection has ended, or the notice could not go, or DrainAckTimeout
	// has passed. A protocol without such a notice returns a closed channel.
	drain() <-chan struct{}
	// flushed waits until the answers the connection has queued are
	// written, or ctx ends (its error then).
	flushed(ctx context.Context) error
	// close closes the connection at once: calls in flight lose their
	// caller.
	close()
}

// callConn is the connection a Client's network calls and streams go over,
// whatever its protocol: the zerodial wire's is clientConn. Client.connect
// finds or dials it; a call sees the context rule, the nil rule and the
// reply zeroed before it gets here.
type callConn interface {
	call(ctx context.Context, name string, args, reply any) error
	// openStream opens a stream; ready asks the server to tell when the
	// handler is ready, for Established (WIRE.md, Streams).
	openStream(ctx context.Context, name string, window int, ready bool) (callerEnd, error)
	// failure says why the connection ended; nil while it works.
	failure() error
	// close fails the calls in flight with ErrShutdown and closes the
	// connection; it returns once the connection is done.
	close()
}
