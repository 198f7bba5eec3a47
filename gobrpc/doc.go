// Package gobrpc is net/rpc's gob codec, exported: NewServerCodec and
// NewClientCodec speak the stream that rpc.Dial, rpc.NewClient, rpc.ServeConn
// and rpc.Server.ServeConn speak, byte for byte, for APIs that take an
// rpc.ServerCodec or rpc.ClientCodec (the standard library keeps its own gob
// codec unexported). It is shaped like net/rpc/jsonrpc.
//
// The stream is one gob stream in each direction: for every request a header
// (rpc.Request) then a body, for every response a header (rpc.Response) then
// a body, each written through a buffer that is flushed once per request or
// response, as net/rpc does.
//
// Three things differ from net/rpc's codec, none of them visible to a peer
// that behaves:
//
//   - Bounded reading. Gob sends each message as a byte count then that many
//     bytes, and accepts counts up to 8 GiB (1 GiB on 32-bit systems). The
//     codecs read the counts themselves and refuse one over the limit
//     (DefaultMaxMessage, or WithMaxMessage) before reading any of its bytes,
//     with a *MessageTooLargeError ("gobrpc: message of N bytes, limit M");
//     the stream cannot go on after it, so every later read fails with the
//     same error. What one message may make gob allocate is therefore at most
//     the limit (gob allocates a message's declared size before it arrives).
//   - A failed write closes the connection. net/rpc's Server ignores the error
//     WriteResponse returns, so a response that cannot be written (a body gob
//     cannot encode, a failed flush) would leave its caller waiting; the
//     server codec flushes what it has (the header of a body that failed, as
//     net/rpc's does) and closes the connection, so the client sees it end.
//     The client codec closes too, without flushing: net/rpc's leaves the
//     header of a request whose body failed in its buffer, where the next
//     request's flush sends it, and the server then reads that request's
//     header as the failed one's body.
//   - A nil pointer body is an error, where gob panics.
//
// Close closes the connection once (later calls return nil); reads and writes
// after Close fail with an error that wraps net.ErrClosed.
package gobrpc
