// Package tcp is a Transport of one frame stream per TCP (or TLS)
// connection, for peers that cannot speak yamux. Its frames are the ones
// WIRE.md specifies, shared with the mux transport.
//
// Writes are buffered and flushed once per message, with TCP_NODELAY set, so
// a message costs one write system call. Many goroutines may Send on one
// socket; frames never interleave.
package tcp
