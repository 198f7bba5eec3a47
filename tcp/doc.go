// Package tcp is a Transport of one frame stream per TCP (or TLS)
// connection, for peers that cannot speak yamux. Its frames are the ones
// WIRE.md specifies, shared with the mux transport.
//
// Both ends open a connection with an 8-byte preface (WIRE.md, section 2)
// naming the protocol and its version, "tcp/1", sent at once by each, so it
// costs one round trip. Dial fails, with an error matching
// transport.ErrProtocol, when the peer is not a tcp listener of this
// version, and a Listener hands out only connections whose client sent the
// right preface. NewSocket speaks the same protocol over a connection made
// some other way (a socketpair, net.Pipe, a proxy's connection).
//
// Dial and Listen take a unix socket's address as well as a TCP one:
// "unix:" and the socket's path ("unix:/run/app.sock"), the form
// docs/unix.md describes, with its stale-file and pick-a-free-path rules.
// Over it everything here holds the same — preface, limits, fallback, TLS
// — and a Socket reports the peer process's credentials
// (transport.PeerCredReporter; Linux so far).
//
// WithFallback lets a listener's port serve clients that do not speak
// zerodial as well (net/rpc's gob and JSON-RPC clients, msgpackrpc, HTTP):
// the listener then reads a client's first bytes before it writes its
// preface, and hands a client whose bytes are not a zerodial preface to a
// fallback.Listener, those bytes replayed (WIRE.md, "One port").
//
// Bodies of 1 KiB or more are compressed with S2 when both ends have
// compression on, the default; each end announces it in its preface, so a
// peer that does not is sent plain frames (WIRE.md, "Compression").
// WithCompressionThreshold moves the threshold and WithoutCompression
// turns it off both ways.
//
// Writes are buffered and flushed once per message, with TCP_NODELAY set, so
// a message costs one write system call. Many goroutines may Send on one
// socket; frames never interleave.
//
// Transport.Close closes the sockets the Transport dialled, which then
// fail with transport.ErrClosed, and fails its later Dials with it, as
// memory's and mux's do; its listeners serve on.
//
// New and NewSocket take this package's options, of type Option:
// WithMaxFrameSize, WithTLS and WithLogger (the mux and memory packages
// have options of the same names, which do not compile here),
// WithHandshakeTimeout, WithFrameTimeout, WithFallback,
// WithCompressionThreshold and WithoutCompression. New does not
// fail; a Transport made with invalid options fails every Dial and Listen
// with one error that names each of them and its value.
package tcp
