// Package mux is a Transport of yamux streams over one TCP (or TLS)
// connection per remote address: the network path of zerodial.
//
// The first Dial to an address connects a session (TCP, then TLS when
// WithTLS is given, then the 8-byte preface each end sends at
// once, naming the protocol "mux/1" (WIRE.md, section 2), then a yamux
// client); every Dial opens a new stream on it, which costs a frame, not a
// handshake. A peer that is not a mux listener of this version fails Dial
// with an error matching transport.ErrProtocol. Each stream carries
// one frame stream exactly as the tcp transport's connection does (see
// WIRE.md), and is one Socket: closing a Socket, on either end, ends that
// stream only. A Listener serves a yamux session on every connection it
// accepts and returns the streams of all of them from Accept. With
// WithFallback, a Listener's port serves clients that do not speak
// zerodial as well (net/rpc's gob and JSON-RPC clients, msgpackrpc, HTTP):
// it reads a client's first bytes before it writes its preface, and hands a
// client whose bytes are not a zerodial preface to a fallback.Listener,
// those bytes replayed (WIRE.md, "One port").
//
// Dial and Listen take a unix socket's address as well as a TCP one:
// "unix:" and the socket's path ("unix:/run/app.sock"), the form
// docs/unix.md describes, as tcp's do; a session then runs over the unix
// socket, and its streams report the peer process's credentials
// (transport.PeerCredReporter; Linux so far). Back names a session by its
// peer's address, which unix clients share (unnamed, "unix:"): over a unix
// listener, Back's Dial reaches a client only while it is the only one.
//
// Either end of a session may open streams, so either end may serve and
// call: Back turns a listener into a Transport whose Dial opens a stream
// towards the peer of one of its sessions, named by the remote address
// its handlers see, and Transport.Incoming (ClientConn.Incoming) is the
// Listener of the streams so opened on a dialler's sessions. A server
// thereby calls a client behind NAT over the connection the client made;
// a client that serves nothing closes such streams at once, so the
// server's call fails promptly rather than waiting.
//
// NewClientConn and NewServerConn run the two ends of one session over a
// net.Conn the caller already has (a unix socket, net.Pipe, a proxy's
// connection), for when the connection is not this package's to dial or
// accept.
//
// Sessions are watched: keepalive pings notice a peer that stops answering,
// and a session that dies (the peer went away, a write failed, keepalive
// failed) is dropped, so the next Dial reconnects. A stream of a dead
// session fails Send and Recv with ErrSessionClosed rather than io.EOF, at
// once, however many streams the session had (data received before is
// still read first). Transport.Close closes every session it dialled, and
// their streams then fail with an error matching transport.ErrClosed as
// well, as a tcp socket's does once tcp's Transport is closed; a stream
// the peer's listener had not yet accepted is dropped there (yamux cannot
// acknowledge it once its session has ended). A closed session, its
// streams included, is freed at once rather than kept for the stream close
// timeout (WithStreamCloseTimeout), unless its connection ended in the
// middle of a yamux frame.
//
// A session holds at most DefaultStreamLimit (4096) open streams unless
// WithStreamLimit says otherwise: past it, Dial waits for a stream of the
// session to close, and a listener takes no more streams from that peer
// until one of its streams closes. The limit bounds the memory, and the
// goroutines serving streams, that one peer can make a listener hold.
// Streams opened the other way (Back, Incoming) have a limit of their own.
//
// A session's prefaces also say whether each end accepts S2-compressed
// frames; when both do (the default), bodies of 1 KiB or more are
// compressed on every stream of the session (WIRE.md, "Compression";
// WithCompressionThreshold, WithoutCompression).
//
// New takes this package's options, of type Option: WithMaxFrameSize,
// WithTLS and WithLogger, which the tcp and memory packages have too under
// the same names, WithHandshakeTimeout and WithFrameTimeout, which tcp has
// too, and WithKeepAlive, WithStreamLimit, WithAcceptBacklog,
// WithStreamOpenTimeout, WithStreamCloseTimeout, WithWriteTimeout,
// WithStreamWindow, WithDialer, WithFallback, WithCompressionThreshold and
// WithoutCompression. Another package's options do not
// compile here. New does not fail; a Transport made with invalid options
// fails every Dial and Listen with one error that names each of them and
// its value. yamux's diagnostics go to the transport's slog.Logger (see
// WithLogger), never to standard error, and every session gets its own
// copy of the yamux configuration.
//
// yamux treats closing a stream as a half-close; this package does not: a
// Send to a stream the peer has closed fails, as the Socket contract asks,
// instead of blocking on a window the peer will never open again.
package mux
