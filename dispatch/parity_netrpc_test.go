package dispatch_test

import (
	"context"
	"io"
	"net"
	"net/rpc"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
)

// The netrpc path: the test Server reached through ServeCodec, by a Client
// from DialCodec, gob at both ends. The conformance suite runs on it
// (dispatchtest.NetRPCGob declares what differs there, and why); so do the
// tests of a rule a Client over a net/rpc codec keeps as well
// (pathsAndNetRPC, acrossPathsAndNetRPC). Those that do not run there, and
// why:
//
// | test | other paths | netrpc | why |
// | --- | --- | --- | --- |
// | TestReplyTooLargeSameMessage | a reply over the frame limit: CodeInternal, "dispatch: reply of M is too large: ...", the connection goes on | "dispatch: decoding reply of M: gobrpc: message of N bytes, limit L" (not an *Error), and the connection ends | ServeCodec cannot measure what its codec writes, and the Client's gob codec bounds what it reads |
// | TestTypedNilArgs, TestNilArgsToRawBytesMethod | nil args, or a typed nil, are zero arguments | the call fails as a lost connection | gob cannot encode nil, nor a nil pointer (gobrpc) |
// | TestUnencodableArgsToUnknownMethod | the Client's codec error, the connection goes on | gob's words, and the connection ends | a request whose body fails to encode ends the connection |
// | TestEmptyMetadataArrivesAsNil, TestMetadataCountsTowardsFrameLimit | metadata | none | net/rpc carries no metadata |
// | TestUnacceptedCodecRefusedOnEveryPath | WithCodec | DialCodec refuses WithCodec | the rpc.ClientCodec encodes the calls |
// | the shutdown tests (shutdown_test.go) | Shutdown drains a connection | a call during Shutdown is refused with CodeUnavailable; the connection closes when the calls in flight are answered | net/rpc has no notice of a server draining (TestCodecClientServerShutdown) |
// | streams (the stream tests beyond the suite) | streams | OpenStream and CallStream fail with CodeUnimplemented | net/rpc has no streams |
// | allocations and benchmarks | | | measures, not rules |

// netrpcCodec is an encoding of net/rpc a Server is reached through: the
// Server's codec (ServeCodec) and the Client's (DialCodec), each reading
// messages of at most limit bytes (0: the codec's default).
type netrpcCodec struct {
	server func(conn net.Conn, limit int) rpc.ServerCodec
	client func(conn io.ReadWriteCloser, limit int) rpc.ClientCodec
}

var gobCodec = &netrpcCodec{
	server: func(conn net.Conn, limit int) rpc.ServerCodec {
		return gobrpc.NewServerCodec(conn, gobrpc.WithMaxMessage(limit))
	},
	client: func(conn io.ReadWriteCloser, limit int) rpc.ClientCodec {
		return gobrpc.NewClientCodec(conn, gobrpc.WithMaxMessage(limit))
	},
}

// netrpcPath is the test Server served through ServeCodec with gob on a
// loopback listener, called by a Client from DialCodec with gob: the same
// case bodies run on it as on paths. It is not in paths, whose tests open
// streams and send metadata, which net/rpc has not.
var netrpcPath = path{"netrpc", func(t testing.TB, o ...setupOption) *env { return netrpcEnv(t, gobCodec, o...) }}

// pathsAndNetRPC is paths and the netrpc path, for the tests of a rule a
// Client over a net/rpc codec keeps as well.
func pathsAndNetRPC() []path { return append(slices.Clone(paths), netrpcPath) }

func netrpcEnv(t testing.TB, k *netrpcCodec, o ...setupOption) *env {
	srv, arith, keeper, rec := newServerKeeper(t, o...)
	srv, c := netrpcServe(t, k, srv, 0, 0)
	return &env{client: c, arith: arith, keeper: keeper, rec: rec, limit: gobrpc.DefaultMaxMessage, server: srv, netrpc: k}
}

// netrpcServe serves srv through ServeCodec with k's server codec, reading
// messages of at most serverLimit bytes, and dials it with a Client over
// k's client codec, reading at most clientLimit. Both end with the test.
func netrpcServe(t testing.TB, k *netrpcCodec, srv *dispatch.Server, serverLimit, clientLimit int) (*dispatch.Server, *dispatch.Client) {
	addr := serveNetRPC(t, srv, func(conn net.Conn) rpc.ServerCodec { return k.server(conn, serverLimit) })
	c, err := dispatch.DialCodec(context.Background(), nil, "tcp", addr, func(conn io.ReadWriteCloser) rpc.ClientCodec { return k.client(conn, clientLimit) })
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return srv, c
}
