// Package fallback serves, on the port of a zerodial tcp or mux listener,
// every client that does not speak zerodial: net/rpc's gob clients
// (rpc.Dial), JSON-RPC 1.0 clients (jsonrpc.Dial, other languages'),
// HashiCorp's msgpackrpc clients, HTTP, as drpc's drpcmigrate.ListenMux
// serves one port to two protocols.
//
// A Listener is a net.Listener of the connections a zerodial listener found
// not to speak zerodial (tcp.WithFallback, mux.WithFallback). The listener
// reads a connection's first bytes before it writes anything (WIRE.md,
// "One port"), so a foreign client never receives a zerodial byte; the
// connection Accept returns replays those bytes to its first Reads, so the
// server that takes it reads the stream exactly as the client sent it.
//
// Each connection has a Kind, told from its first bytes by Classify (or, for
// a TLS connection that negotiated a protocol by ALPN, by that protocol), and
// Split routes kinds to a listener of their own, so that an HTTP server and
// a net/rpc codec loop share one port:
//
//	fb, _ := fallback.New()
//	web := fb.Split(fallback.HTTP, fallback.HTTP2)
//	go http.Serve(web, handler)
//	go serveGob(fb) // every other kind
//	l, _ := tcp.New(tcp.WithFallback(fb)).Listen(":7000")
//
// Offer hands a connection over: the transports call it, and so can a
// program's own listener.
package fallback
