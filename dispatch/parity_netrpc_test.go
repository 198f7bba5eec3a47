package dispatch_test

import (
	"context"
	"io"
	"net"
	"net/rpc"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
)

// The netrpc path of the parity suite: the test Server reached through
// ServeCodec, by a Client from DialCodec, gob at both ends. TestParity
// runs every parity case on it that applies, and compares its outcome with
// the tcp path's after the case's declared difference (parityCase.netrpc):
// the same outcome, or one a function of tcp's says, or none (the case
// does not apply). A case that declares nothing fails on netrpc.
//
// What a net/rpc client cannot have, case by case (every case not listed
// here has the same outcome on netrpc as on the other paths: results,
// handler errors as text, panics, net/rpc's words for unknown names, the
// nil reply rule, a caller's context ending the call on its own end, a
// Server closed mid-call, a body near the limit):
//
// | case | other paths | netrpc | why |
// | --- | --- | --- | --- |
// | nil args | the handler gets zero arguments | the call fails as a lost connection: "gob: cannot encode nil value"; the next call dials again | gob cannot encode nil, and a request whose body fails to encode ends the connection (the codec may have written its header) |
// | handler error with code | *Error with the handler's Code ("custom") | the same Message, CodeUnknown | net/rpc carries an error as text |
// | an error detail crosses | *Error with the handler's Code and its detail | the same Message, CodeUnknown, no details | net/rpc carries an error as text |
// | several error details cross, in order | as above, the details in order | as above | as above |
// | error details over the bound | CodeInternal, "dispatch: error details are too large: ..." | the same Message, CodeUnknown | ServeCodec checks the bound as every path does; net/rpc carries the error as text |
// | an error detail that cannot be encoded | CodeInternal, "dispatch: encoding error detail ..." | the same Message, CodeUnknown | as above |
// | a sentinel error crosses | CodeFailedPrecondition, errors.Is(err, sentinel) | the same Message, CodeUnknown, errors.Is false | net/rpc carries an error as text |
// | wrong args type | CodeInvalidArgument, msgpack's words | CodeInvalidArgument, gob's words | the Server's codec is gob's, and says why in its words |
// | arguments of another type | CodeInvalidArgument, msgpack's words | CodeInvalidArgument, gob's words | as above |
// | a field of another type | CodeInvalidArgument, the field, what it holds and the type it wants, in the codec's words | CodeInvalidArgument, gob's words, which name the field too | as above |
// | a reply of another type | the reply's type and what the body holds, in the codec's words | gob's words, which name both types | the Client's codec is gob's |
// | a misspelled field refused by a strict Server | CodeInvalidArgument, "unknown field Bb", the handler not called | the call succeeds, the field dropped | gob has no strict decoding: it drops the fields its receiver lacks, by design (jsonrpc's codec refuses them: TestStrictDecodingJSONRPC) |
// | deadline exceeded | the caller and the handler's context end at the deadline | not run | no deadline reaches the handler: it runs on until the connection ends (the caller's side is the "handler blind" cases, the same) |
// | cancellation reaches the handler | the handler's context ends with the caller's | not run | net/rpc cannot cancel a call: the handler runs on until the connection ends |
// | oversize args | refused by the Client before sending: ErrFrameTooLarge | refused by the Server: CodeInvalidArgument, "gobrpc: message of N bytes, limit M", or ErrShutdown when the connection's reset overtakes that answer; the Server closes the connection | gob's codec bounds what it reads, not what it writes: the Server's codec refuses the body and cannot read on; closed with the body unread, the connection is reset |
// | a listener of another protocol | the dial fails with ErrProtocol | not run | net/rpc has no preface: its dial is a TCP connect, and a listener of another protocol is found out by the first call |
// | deadline and metadata reach the handler, nothing else does | the handler sees both | the handler sees neither | net/rpc carries no metadata and no deadline |
// | request metadata of 1,100 entries | refused with ErrFrameTooLarge, the handler never runs | the call succeeds without the metadata | net/rpc carries no metadata: there is nothing to refuse |
// | request metadata over the frame limit | as above | as above | as above |
// | request over the server's frame limit | the Server drops the connection: ErrShutdown | the Server answers CodeInvalidArgument, "gobrpc: message of N bytes, limit M", then closes the connection; ErrShutdown when the reset overtakes the answer | ServeCodec reads the header, so it can answer the call whose body its codec refused; closed with the body unread, the connection is reset |
// | reply over the client's frame limit | ErrShutdown wrapping ErrFrameTooLarge | the same, in gobrpc's words: "dispatch: reading the body of ...: gobrpc: message of N bytes, limit M" | gobrpc counts gob's bytes, and its error matches ErrFrameTooLarge |
// | reply metadata of 1,100 entries | the reply refused: CodeInternal, no metadata | the reply arrives, without the metadata; a handler's error is its error | net/rpc carries no metadata: there is nothing to refuse |
// | reply metadata over the frame limit | as above | as above | as above |
// | a handler's changes to its metadata are its own | the handler's changes are its own | not run | net/rpc carries no metadata |
// | error reply over the frame limit | CodeInternal, "reply ... is too large", the connection goes on | ErrShutdown: the Client's gob codec refuses the message; the next call dials again | ServeCodec cannot measure what its codec writes, so it sends the error whole, and the Client's codec bounds what it reads |
// | error reply over the client's frame limit | ErrShutdown wrapping ErrFrameTooLarge | the same, in gobrpc's words: "gobrpc: message of N bytes, limit M" | gobrpc counts gob's bytes, and its error matches ErrFrameTooLarge |
// | a handler's own call fails: its connection | CodeInternal, the handler's words: "Hold.Wait over memory: connection is shut down: ..." | the same Message, CodeUnknown; not ErrShutdown either | net/rpc carries an error as text |
// | a handler's own call fails: its Client closed | as above: "Hold.Wait over memory: connection is shut down" | as above | as above |
// | a handler's own call fails, wrapped in its words | as above, in the handler's words around them | as above | as above |
//
// Beyond the parity table, the tests of a rule on every path run on netrpc
// too where it keeps the rule (pathsAndNetRPC, acrossPathsAndNetRPC):
// Go, Go's unbuffered channel, copies that share no memory, a Client's or
// a Server's Close failing a call in flight at once, a handler's
// runtime.Goexit, the reply zeroed when the context had already ended, a
// nil *Error returned, a Server's Close or Shutdown ending the handler's
// context, a Client's Close ending it, and the call's end ending it. Those
// that do not run there, and why:
//
// | test | other paths | netrpc | why |
// | --- | --- | --- | --- |
// | TestReplyTooLargeSameMessage | a reply over the frame limit: CodeInternal, "dispatch: reply of M is too large: ...", the connection goes on | "dispatch: decoding reply of M: gobrpc: message of N bytes, limit L" (not an *Error), and the connection ends | ServeCodec cannot measure what its codec writes, and the Client's gob codec bounds what it reads |
// | TestTypedNilArgs, TestNilArgsToRawBytesMethod | nil args, or a typed nil, are zero arguments | the call fails as a lost connection | gob cannot encode nil, nor a nil pointer (gobrpc) |
// | TestUnencodableArgsToUnknownMethod | the Client's codec error, the connection goes on | gob's words, and the connection ends | a request whose body fails to encode ends the connection |
// | TestEmptyMetadataArrivesAsNil, TestMetadataCountsTowardsFrameLimit | metadata | none | net/rpc carries no metadata |
// | TestUnacceptedCodecRefusedOnEveryPath | WithCodec | DialCodec refuses WithCodec | the rpc.ClientCodec encodes the calls |
// | the shutdown tests (shutdown_test.go) | Shutdown drains a connection | a call during Shutdown is refused with CodeUnavailable; the connection closes when the calls in flight are answered | net/rpc has no notice of a server draining (TestCodecClientServerShutdown) |
// | streams (streamCases, TestStreamParity and the other stream tests) | streams | OpenStream and CallStream fail with CodeUnimplemented | net/rpc has no streams |
// | allocations and benchmarks | | | measures, not rules |

// onNetRPC says how a parity case's outcome on the netrpc path relates to
// its outcome on the tcp path. Its zero value is no decision, which fails
// the case on netrpc: a new case has to decide.
type onNetRPC struct {
	decided bool
	// why says in a line why the outcome differs, or why the case does not
	// apply; empty when the outcome is the same.
	why string
	// want maps the tcp path's outcome to what netrpc must show: one of
	// them, where a race decides which (the order of a Server's answer and
	// its close). None with a why: the case does not apply, and does not
	// run on netrpc.
	want []func(tcp outcome) outcome
}

// sameOnNetRPC: the outcome on netrpc is the tcp path's.
var sameOnNetRPC = onNetRPC{decided: true}

// differsOnNetRPC: the outcome on netrpc is want of the tcp path's, for
// the reason why.
func differsOnNetRPC(why string, want ...func(tcp outcome) outcome) onNetRPC {
	return onNetRPC{decided: true, why: why, want: want}
}

// notOnNetRPC: the case does not apply to net/rpc, for the reason why.
func notOnNetRPC(why string) onNetRPC { return onNetRPC{decided: true, why: why} }

// codeLost is a handler's error as net/rpc carries it: its text, with
// CodeUnknown.
func codeLost(o outcome) outcome {
	o.Code = dispatch.CodeUnknown
	return o
}

// gobWords replaces the words of a decoding failure with gob's.
func gobWords(err string) func(o outcome) outcome {
	return func(o outcome) outcome {
		o.Err = err
		return o
	}
}

// handlerRan is what requestMetadataRefused records when the handler ran,
// with the replies of its two calls made without the metadata.
func handlerRan(o outcome) outcome {
	o.Interceptor = []string{"the handler ran"}
	o.Extra = "ok, reply 6; ok, reply 1"
	return o
}

// replyWithoutMetadata is what replyMetadataRefused records when no
// metadata crosses: the replies arrive (1, 0), the handler's error is its
// own, and the caller's capture receives none, for both methods and both
// contexts.
func replyWithoutMetadata(o outcome) outcome {
	one := []string{
		"ok (code <not *dispatch.Error>), reply 1, metadata 0",
		"ok (code <not *dispatch.Error>), reply 0, metadata 0",
		"failed, with metadata (frame too large: false, shut down: false) (code ), reply 0, metadata 0",
	}
	var all []string
	for range 4 {
		all = append(all, one...)
	}
	o.Extra = strings.Join(all, "; ")
	return o
}

// asOnTCP is the tcp path's outcome, unchanged: an alternative of a
// differing case's.
func asOnTCP(o outcome) outcome { return o }

// gobLimit is what errorReplyTooLarge records when the Client's gob codec
// refuses the response of each of its four calls — the sizes are of the
// messages gob sends for the error of Err.Borrows, then of Err.Keeps —
// and the call after them, on a new connection.
func gobLimit(borrows, keeps, limit int) string {
	part := func(method string, n int) string {
		return "Err." + method + " over <path>: connection is shut down: gobrpc: message of " + strconv.Itoa(n) + " bytes, limit " + strconv.Itoa(limit) + " (frame too large: true, shut down: true) (code <not *dispatch.Error>)"
	}
	return strings.Join([]string{part("Borrows", borrows), part("Borrows", borrows), part("Keeps", keeps), part("Keeps", keeps), "then: ok"}, "; ")
}

var (
	netrpcNilArgs = differsOnNetRPC("gob cannot encode nil; a request that fails to encode ends the connection", func(o outcome) outcome {
		o.Err = "Arith.Multiply over <path>: connection is shut down: dispatch: writing the request of Arith.Multiply: gob: cannot encode nil value"
		o.ErrType = "*dispatch.callFailure"
		o.Interceptor = nil
		return o
	})
	netrpcCodeLost = differsOnNetRPC("net/rpc carries an error as text: the Code is lost", codeLost)
	netrpcSentinel = differsOnNetRPC("net/rpc carries an error as text: the Code and errors.Is are lost", func(o outcome) outcome {
		o = codeLost(o)
		o.Extra = "errors.Is: false"
		return o
	})
	netrpcWrongArgs = differsOnNetRPC("the Server's codec is gob's: its words", gobWords(
		"dispatch: decoding arguments of Arith.Multiply: gob: type mismatch in decoder: want struct type dispatch_test.Args; got non-struct"))
	netrpcOtherArgs = differsOnNetRPC("the Server's codec is gob's: its words", gobWords(
		"dispatch: decoding arguments of Arith.Multiply: gob: type mismatch: no fields matched compiling decoder for Args"))
	netrpcNoDeadline = notOnNetRPC("no deadline or cancellation reaches the handler, which runs on until the connection ends")
	netrpcOversize   = differsOnNetRPC("gob's codec bounds what it reads, not what it writes: the Server refuses the body, answers and closes", func(o outcome) outcome {
		o.Err = "dispatch: decoding arguments of Keeper.Len: gobrpc: message of 4194313 bytes, limit 4194304"
		o.ErrType = "*dispatch.Error"
		o.Code = dispatch.CodeInvalidArgument
		o.Extra = "frame too large: false"
		return o
	}, func(o outcome) outcome {
		// The Server closed the connection with the body unread: the reset
		// overtook its answer.
		o.Err = "Keeper.Len over <path>: connection is shut down: the server closed the connection"
		o.ErrType = "*dispatch.callFailure"
		o.Extra = "frame too large: false"
		return o
	})
	netrpcNoPreface   = notOnNetRPC("net/rpc has no preface: a dial is a TCP connect, and refuses no protocol")
	netrpcNoMetadata  = notOnNetRPC("net/rpc carries no metadata")
	netrpcNoCtxValues = differsOnNetRPC("net/rpc carries no metadata and no deadline", func(o outcome) outcome {
		o.Reply = "{HasDeadline:false DeadlineSane:false Metadata:map[] SawForeign:false}"
		o.Interceptor = slices.Clone(o.Interceptor)
		for i, s := range o.Interceptor {
			o.Interceptor[i] = strings.ReplaceAll(s, "md=map[trace:t-1 user:alice ключ:значение]", "md=map[]")
		}
		return o
	})
	netrpcRequestMetadata = differsOnNetRPC("net/rpc carries no metadata: nothing to refuse", handlerRan)
	netrpcReplyMetadata   = differsOnNetRPC("net/rpc carries no metadata: nothing to refuse", replyWithoutMetadata)
	netrpcServerLimit     = differsOnNetRPC("ServeCodec reads the header, so it answers the call whose body its codec refused, then closes", func(o outcome) outcome {
		o.Extra = "dispatch: decoding arguments of Big.Len: gobrpc: message of 102406 bytes, limit 65536 (frame too large: false, shut down: false), handler ran: false"
		return o
	}, asOnTCP) // the reset overtook the answer: the connection lost, as on tcp
	netrpcClientLimit = differsOnNetRPC("the words are gobrpc's, which count gob's bytes; its error matches ErrFrameTooLarge and ends the connection, as on the wire", func(o outcome) outcome {
		o.Extra = "Big.Make over <path>: connection is shut down: dispatch: reading the body of Big.Make: gobrpc: message of 102406 bytes, limit 65536 (frame too large: true, shut down: true), reply of 0"
		return o
	})
	netrpcErrorTooLarge = differsOnNetRPC("ServeCodec cannot measure what its codec writes: the Client's codec refuses it", func(o outcome) outcome {
		o.Extra = gobLimit(5242901, 5242899, gobrpc.DefaultMaxMessage)
		return o
	})
	netrpcErrorOverClientLimit = differsOnNetRPC("the words are gobrpc's, which count gob's bytes (its error matches ErrFrameTooLarge, as the wire's does)", func(o outcome) outcome {
		o.Extra = gobLimit(65657, 65655, 64<<10)
		return o
	})
)

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

// TestParityNetRPCDifferencesListed: every parity case whose outcome
// differs on netrpc, or that does not run there, has its row in the table
// of this file's comment, which docs/netrpc.md quotes; and every row names a
// case that does.
func TestParityNetRPCDifferencesListed(t *testing.T) {
	src, err := os.ReadFile("parity_netrpc_test.go")
	require.NoError(t, err)
	rows := map[string]bool{}
	// The first table, of parity cases; the second is of other tests.
	table, _, _ := strings.Cut(string(src), "// | test | other paths")
	for line := range strings.Lines(table) {
		// "// | case | other paths | netrpc | why |"
		cells := strings.Split(strings.TrimSpace(line), " | ")
		if len(cells) == 5 && cells[0] == "//" && cells[1] != "case" && cells[1] != "---" {
			rows[cells[1]] = true
		}
	}
	differ := map[string]bool{}
	for _, c := range parityCases {
		if c.netrpc.why != "" {
			differ[c.name] = true
			assert.True(t, rows[c.name], "case %q differs on netrpc (%s) and has no row in the table", c.name, c.netrpc.why)
		}
	}
	for name := range rows {
		assert.True(t, differ[name], "the table's row %q names no case that differs on netrpc", name)
	}
}
