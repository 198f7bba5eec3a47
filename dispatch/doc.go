// Package dispatch serves net/rpc-style services over any transport and
// calls them, with one router, one interceptor chain, one error mapping,
// one nil rule, one panic rule and one deadline rule applied by the same code
// on every path:
//
//   - the network paths: a Client over a transport.Socket (memory, tcp or
//     mux) to a Server serving the matching Listener;
//   - the shortcut: a Client made with WithShortcut whose dialled address is
//     served by a Server in this process calls that Server's router
//     directly, with no socket, in one of two modes — ShortcutCopy (the codec
//     runs once each way; caller and handler share no memory) or
//     ShortcutDirect (no codec for the methods registered with Borrows,
//     whose documentation states the contract; copy for all others).
//
// Programs not yet moved are reached through net/rpc codecs: a Server's
// ServeConn (or ServeCodec, given a codec alone) answers a net/rpc client
// (gob, JSON-RPC, msgpackrpc), and a Client made by NewCodecClient or
// DialCodec calls a net/rpc server. Both keep the rules below except what
// net/rpc cannot carry — metadata, the deadline, streams, an error's code
// and details — which their docs list.
//
// What a service or caller can observe is the same on every path; only the
// time differs. The rules:
//
//   - Replies. reply must be a non-nil pointer; Call zeroes *reply before the
//     call, and on error *reply is left zero.
//   - Errors. A handler's error reaches the caller as an *Error with the same
//     Code, Message and details (ErrorDetail), the details within
//     MaxErrorDetailsSize and never sharing memory with the handler's; failures of the connection are not *Error (see
//     ErrShutdown), and name the call or stream. A handler's error that is
//     the failure of a call or stream of its own reaches its caller as an *Error with
//     CodeInternal, never as the caller's own failure (ErrShutdown says
//     why). Unknown services and methods use net/rpc's wording.
//   - Panics. A handler panic becomes an *Error with CodeInternal; neither
//     process dies.
//   - Deadlines. The caller's deadline reaches the handler's context;
//     cancelling the caller's context cancels the handler's. When the
//     caller's context ends first, Call returns at once — whatever the
//     handler is doing, on the shortcut too; only a request still being
//     written to a peer that stopped reading holds it up to 100 ms more,
//     so that a write a peer is taking is never cut under the
//     connection's other calls (docs/reliability.md) — with an *Error matching
//     context.DeadlineExceeded or context.Canceled whose text names the
//     call ("Arith.Multiply over mux: context deadline exceeded"), and
//     nothing the caller owns is touched afterwards.
//   - Context values. Only metadata (WithMetadata, MetadataFrom) crosses from
//     caller to handler; no other context value does.
//   - Limits. What the network refuses as too large the shortcut refuses,
//     with the same error: in copy mode, a request, a reply or a stream
//     message over the frame limit; in direct mode too, metadata (a call's,
//     or a stream's opening frame) over the frame limit or with more header
//     entries than a frame carries, and a handler's error reply, whose
//     message or metadata over the frame limit makes it a CodeInternal reply
//     without them. Only what direct mode passes by pointer is not measured
//     (Borrows).
//
// Streams (HandleStream, OpenStream, CallStream) follow the same rules on
// the same paths, with flow control per direction (WithStreamWindow). A
// message over the frame limit fails its Send with an error matching
// transport.ErrFrameTooLarge, and the stream goes on; reply metadata or a
// handler's error message that makes the end of a stream too large is
// dropped, and the stream ends with CodeInternal, as a unary reply does; on ShortcutDirect, what passes by
// pointer is not measured, as a direct call's arguments and reply are not.
// A stream whose opening frame, its metadata, is too large fails to open,
// on every path. What a Server's handler has not yet consumed counts in its connection's
// byte budget (WithMaxBytesPerConn): a stream whose messages take the
// connection past it ends with CodeResourceExhausted. A Server's Shutdown
// waits for open streams as for calls in flight; ShuttingDown tells their
// handlers that it has begun, so that a stream that would run until its
// caller leaves can end then. A stream's Established, and a server
// stream's Open, return once the handler is ready (ServerStream.Ready, its
// first message, or its return), on every path: what the handler set up
// before is in place.
//
// # Tests in a synctest bubble
//
// The in-process paths — memory, shortcut copy and shortcut direct — work
// inside a testing/synctest bubble: calls and streams, deadlines, the idle
// and reply timeouts, Shutdown and Close, and a Client of replicas served in
// the process (ejection and readmission, the retry budget, WithReplicaCheck)
// all run in the bubble's fake time, each duration exact. A Server and a
// Client made in a bubble start nothing that outlives them once closed, and
// share nothing with another bubble that a goroutine waits on: the quiet
// sweep is theirs, pooled values that hold a channel are kept per
// connection and per Server, and a Client of replicas measures its times
// from its own start. Make both inside the bubble and close both before it
// ends. tcp and mux cannot: a wait on a real socket is not durably
// blocking, so the bubble's clock does not move while a call waits on one.
//
// # Registration
//
// Methods (Register, RegisterName, Handle, HandleStream) may be registered
// at any time until Shutdown or Close, before Serve and Start or while the
// Server serves: the router's table is replaced whole under a lock by each
// registration and read without one, so registering never holds up a call.
// A call finds a method once its registration has returned, on every path;
// a call made before fails with CodeNotFound, in net/rpc's words. So a
// program whose services call each other in one process (a monolith whose
// services call the others through a Client of its own Server, on the
// shortcut) starts the Server, dials it, and then registers the services
// that hold the Client. Methods are never unregistered; a name is
// registered once.
package dispatch
