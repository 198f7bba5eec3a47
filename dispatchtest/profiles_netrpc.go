package dispatchtest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
)

// The differences of the net/rpc codecs' paths: a Server reached through
// ServeCodec (or ServeConn) by a Client over an rpc.ClientCodec
// (DialCodec). net/rpc carries a method's name, a sequence number, the
// arguments, the reply and an error's text: nothing else.

// codeLost is a handler's error as net/rpc carries it: its text, with
// CodeUnknown.
func codeLost(o Outcome) Outcome {
	o.Code = dispatch.CodeUnknown
	return o
}

// words replaces the words of a failure with a codec's.
func words(err string) func(o Outcome) Outcome {
	return func(o Outcome) Outcome {
		o.Err = err
		return o
	}
}

// NoMetadata: the path carries no metadata, either way. What the caller
// sends does not arrive, and the handler's reply metadata does not come
// back: nothing is refused for its size.
var NoMetadata = &Difference{
	Name: "no metadata",
	Doc:  "no metadata crosses, either way: the handler sees none, the caller's capture receives none, and none is refused for its size",
	Effects: map[string]Effect{
		"deadline and metadata reach the handler, nothing else does": {
			Doc: "the handler sees no metadata",
			Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Reply = strings.ReplaceAll(o.Reply, "Metadata:map[trace:t-1 user:alice ключ:значение]", "Metadata:map[]")
				o.Interceptor = slices.Clone(o.Interceptor)
				for i, s := range o.Interceptor {
					o.Interceptor[i] = strings.ReplaceAll(s, "md=map[trace:t-1 user:alice ключ:значение]", "md=map[]")
				}
				return o
			}},
		},
		"request metadata of 1,100 entries":     {Doc: "nothing to refuse: the calls succeed, without the metadata", Want: []func(Outcome) Outcome{handlerRan}},
		"request metadata over the frame limit": {Doc: "nothing to refuse: the calls succeed, without the metadata", Want: []func(Outcome) Outcome{handlerRan}},
		"reply metadata of 1,100 entries":       {Doc: "nothing to refuse: the replies arrive, without the metadata; a handler's error is its own", Want: []func(Outcome) Outcome{replyWithoutMetadata}},
		"reply metadata over the frame limit":   {Doc: "nothing to refuse: the replies arrive, without the metadata; a handler's error is its own", Want: []func(Outcome) Outcome{replyWithoutMetadata}},
		"a handler's changes to its metadata are its own": {
			Doc: "the caller's metadata does not reach the handler, which has none to change",
			Run: func(t *testing.T, c Caller) Outcome {
				reply := new(CtxInfo)
				err := c.Call(context.Background(), Call{Method: "Arith.Context", Args: Args{A: 1}, Reply: reply, Metadata: dispatch.Metadata{"k": "caller's"}})
				o := Outcome{Reply: fmt.Sprintf("%+v", *reply)}
				observeErr(&o, err)
				return o
			},
			Check: want(Outcome{Reply: "{HasDeadline:false DeadlineSane:false Metadata:map[] SawForeign:false}"}),
		},
	},
}

// handlerRan is what requestMetadataRefused records when the handler ran,
// with the replies of its two calls made without the metadata.
func handlerRan(o Outcome) Outcome {
	o.Interceptor = []string{"the handler ran"}
	o.Extra = "ok, reply 6; ok, reply 1"
	return o
}

// replyWithoutMetadata is what replyMetadataRefused records when no
// metadata crosses: the replies arrive (1, 0), the handler's error is its
// own, and the caller's capture receives none, for both methods and both
// contexts.
func replyWithoutMetadata(o Outcome) Outcome {
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

// NoDeadline: no deadline or cancellation reaches the handler, which runs
// on until the connection ends; the caller's context still ends the call
// on the caller's side, with the same error.
var NoDeadline = &Difference{
	Name: "no deadline on the wire",
	Doc:  "no deadline or cancellation reaches the handler, which runs on until the connection ends; the caller's context still ends its call, with the same error",
	Effects: map[string]Effect{
		"deadline and metadata reach the handler, nothing else does": {
			Doc: "the handler sees no deadline",
			Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Reply = strings.ReplaceAll(o.Reply, "HasDeadline:true DeadlineSane:true", "HasDeadline:false DeadlineSane:false")
				return o
			}},
		},
		"deadline exceeded": {
			Doc: "the call ends at its deadline, with the same error; the handler sees no deadline",
			Run: func(t *testing.T, c Caller) Outcome {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				reply := intPtr(5)
				err := c.Call(ctx, Call{Method: "Arith.Sleep", Args: Args{A: 5000}, Reply: reply})
				o := Outcome{Reply: fmt.Sprint(*reply)}
				observeErr(&o, err)
				info := new(CtxInfo)
				ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				o.Extra = fmt.Sprint(c.Call(ctx, Call{Method: "Arith.Context", Args: Args{A: 60_000}, Reply: info}), fmt.Sprintf(" %+v", *info))
				return o
			},
			Check: func(t *testing.T, o Outcome) {
				wantErr(dispatch.CodeDeadlineExceeded, "Arith.Sleep over <path>: context deadline exceeded")(t, o)
				assert.True(t, o.IsDeadline)
				assert.Equal(t, "0", o.Reply)
				assert.Equal(t, "<nil> {HasDeadline:false DeadlineSane:false Metadata:map[] SawForeign:false}", o.Extra)
			},
		},
		"cancellation reaches the handler": {
			Doc: "the call ends when its context is canceled, with the same error; the handler's context does not end",
			Run: func(t *testing.T, c Caller) Outcome {
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				reply := intPtr(5)
				go func() { errc <- c.Call(ctx, Call{Method: "Arith.Sleep", Args: Args{A: 5000}, Reply: reply}) }()
				cancel()
				err := <-errc
				o := Outcome{Reply: fmt.Sprint(*reply)}
				observeErr(&o, err)
				return o
			},
			Check: func(t *testing.T, o Outcome) {
				wantErr(dispatch.CodeCanceled, "Arith.Sleep over <path>: context canceled")(t, o)
				assert.True(t, o.IsCanceled)
				assert.Equal(t, "0", o.Reply)
			},
		},
	},
}

// detailsLost is a detailed error as net/rpc carries it: its text, with
// CodeUnknown and no details.
func detailsLost(o Outcome) Outcome {
	o.Code = dispatch.CodeUnknown
	o.Extra = "details []; As: 0 false"
	return o
}

// ErrorsAsText: an error crosses as its text alone: its Code is
// CodeUnknown, its details and what errors.Is found in it are lost.
var ErrorsAsText = &Difference{
	Name: "errors as text",
	Doc:  "an error crosses as its text: CodeUnknown, no details, errors.Is finds no sentinel",
	Effects: map[string]Effect{
		"handler error with code": {Doc: "CodeUnknown", Want: []func(Outcome) Outcome{codeLost}},
		"a sentinel error crosses": {Doc: "CodeUnknown, and errors.Is is false", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o = codeLost(o)
			o.Extra = "errors.Is: false"
			return o
		}}},
		"an error detail crosses":                          {Doc: "CodeUnknown, no details", Want: []func(Outcome) Outcome{detailsLost}},
		"several error details cross, in order":            {Doc: "CodeUnknown, no details", Want: []func(Outcome) Outcome{detailsLost}},
		"error details over the bound":                     {Doc: "the same words, CodeUnknown", Want: []func(Outcome) Outcome{codeLost}},
		"an error detail that cannot be encoded":           {Doc: "the same words, CodeUnknown", Want: []func(Outcome) Outcome{codeLost}},
		"a handler's own call fails: its connection":       {Doc: "the same words, CodeUnknown", Want: []func(Outcome) Outcome{codeLost}},
		"a handler's own call fails: its Client closed":    {Doc: "the same words, CodeUnknown", Want: []func(Outcome) Outcome{codeLost}},
		"a handler's own call fails, wrapped in its words": {Doc: "the same words, CodeUnknown", Want: []func(Outcome) Outcome{codeLost}},
	},
}

// NoStreams: the path has no streams. Every stream case opens a stream
// instead, both ways, and wants it refused: CodeUnimplemented, in words
// that say so.
var NoStreams = &Difference{
	Name: "no streams",
	Doc:  "no streams: OpenStream and CallStream are refused with CodeUnimplemented",
	Streams: &Effect{
		Doc: "the stream is refused with CodeUnimplemented",
		Run: func(t *testing.T, c Caller) Outcome {
			err := c.CallStream(context.Background(), stream[Num, Num]("S.Count"), &Num{3}, func(any) bool { return true })
			o := streamOutcome("", err)
			s, err := c.OpenStream(context.Background(), stream[Num, Num]("S.Echo"))
			if err == nil {
				var m Num
				err = s.Recv(&m)
				s.Close()
			}
			o.Extra = fmt.Sprintf("%v (code %s)", err, codeOf(err))
			return o
		},
		Check: func(t *testing.T, o Outcome) {
			assert.Equal(t, dispatch.CodeUnimplemented, o.Code, "CallStream: %s", o.Err)
			assert.Contains(t, o.Extra, "(code unimplemented)", "OpenStream")
		},
	},
}

// NoPreface: the path's protocol has no preface, so a dial is a
// connection, and a listener of another protocol is found out by the
// first call, which fails as the connection ends.
var NoPreface = &Difference{
	Name: "no preface",
	Doc:  "no preface: a dial is a connection, and a listener of another protocol is found out by the first call, which fails as the connection ends",
	Effects: map[string]Effect{
		"a listener of another protocol": {
			Doc:  "the first call fails, as the connection ends, rather than the dial with ErrProtocol",
			Want: []func(Outcome) Outcome{withExtra("dial failed: true, protocol error: false")},
		},
	},
}

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

// GobCodec: the codec at both ends is gob's (gobrpc): its words where a
// body does not decode, what gob cannot encode, and its bounds, which are
// of what it reads, not of what it writes.
var GobCodec = &Difference{
	Name: "gob's codec",
	Doc:  "gob's codec at both ends: its words for what does not decode; it cannot encode nil; it bounds what it reads, not what it writes",
	Effects: map[string]Effect{
		"nil args": {
			Doc: "gob cannot encode nil; a request that fails to encode ends the connection",
			Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Err = "Arith.Multiply over <path>: connection is shut down: dispatch: writing the request of Arith.Multiply: gob: cannot encode nil value"
				o.ErrType = "*dispatch.callFailure"
				o.Interceptor = nil
				return o
			}},
		},
		"wrong args type": {Doc: "gob's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding arguments of Arith.Multiply: gob: type mismatch in decoder: want struct type dispatchtest.Args; got non-struct")}},
		"arguments of another type": {Doc: "gob's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding arguments of Arith.Multiply: gob: type mismatch: no fields matched compiling decoder for Args")}},
		"a field of another type": {Doc: "gob's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding arguments of Arith.Multiply: gob: wrong type (int) for received field ArgsTextA.A")}},
		"a reply of another type": {Doc: "gob's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding reply of Arith.Fill: gob: decoding into local type *int64, received remote type Reply = struct { X int; S string; List []int; }")}},
		"a misspelled field refused by a strict Server": {
			Doc: "gob has no strict decoding: it drops the fields its receiver lacks, by design",
			Want: []func(Outcome) Outcome{func(Outcome) Outcome {
				return Outcome{Reply: "0", Interceptor: []string{
					"outer> Arith.Multiply *dispatchtest.Args {A:6 B:0} md=map[]", "inner> Arith.Multiply *dispatchtest.Args {A:6 B:0} md=map[]",
					"<inner *int err=<nil>", "<outer *int err=<nil>"}}
			}},
		},
		"oversize args": {
			Doc: "gob's codec bounds what it reads, not what it writes: the Server refuses the body, answers and closes (or the reset overtakes the answer)",
			Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Err = "dispatch: decoding arguments of Keeper.Len: gobrpc: message of 4194313 bytes, limit 4194304"
				o.ErrType = "*dispatch.Error"
				o.Code = dispatch.CodeInvalidArgument
				o.Extra = "frame too large: false"
				return o
			}, func(o Outcome) Outcome {
				o.Err = "Keeper.Len over <path>: connection is shut down: the server closed the connection"
				o.ErrType = "*dispatch.callFailure"
				o.Extra = "frame too large: false"
				return o
			}},
		},
		"request over the server's frame limit": {
			Doc: "ServeCodec reads the header, so it answers the call whose body its codec refused, then closes (or the reset overtakes the answer)",
			Want: []func(Outcome) Outcome{
				withExtra("dispatch: decoding arguments of Big.Len: gobrpc: message of 102406 bytes, limit 65536 (frame too large: false, shut down: false), handler ran: false"),
				func(o Outcome) Outcome { return o },
			},
		},
		"reply over the client's frame limit": {
			Doc:  "gobrpc's words, which count gob's bytes; its error matches ErrFrameTooLarge and ends the connection, as on the wire",
			Want: []func(Outcome) Outcome{withExtra("Big.Make over <path>: connection is shut down: dispatch: reading the body of Big.Make: gobrpc: message of 102406 bytes, limit 65536 (frame too large: true, shut down: true), reply of 0")},
		},
		"error reply over the frame limit": {
			Doc:  "ServeCodec cannot measure what its codec writes: the Client's codec refuses it, and the next call dials again",
			Want: []func(Outcome) Outcome{withExtra(gobLimit(5242901, 5242899, gobrpc.DefaultMaxMessage))},
		},
		"error reply over the client's frame limit": {
			Doc:  "gobrpc's words, which count gob's bytes (its error matches ErrFrameTooLarge, as the wire's does)",
			Want: []func(Outcome) Outcome{withExtra(gobLimit(65657, 65655, 64<<10))},
		},
	},
}

// NetRPCGob is a Server reached through ServeCodec with gob's codec
// (gobrpc), by a Client over gob's (DialCodec).
var NetRPCGob = Profile{Name: "netrpc-gob", Differences: []*Difference{NoMetadata, NoDeadline, ErrorsAsText, GobCodec, NoPreface, NoStreams}}

// JSONCodec: the codec at both ends is net/rpc/jsonrpc's: its words where
// a body does not decode, and no bound on what it reads or writes.
var JSONCodec = &Difference{
	Name: "jsonrpc's codec",
	Doc:  "net/rpc/jsonrpc's codec at both ends, through ServeCodec: encoding/json's words for what does not decode, and its rule of dropping the fields a type lacks; it bounds nothing it reads or writes (ServeConn applies the wire's bounds to a connection)",
	Effects: map[string]Effect{
		"wrong args type": {Doc: "encoding/json's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding arguments of Arith.Multiply: json: cannot unmarshal string into Go value of type dispatchtest.Args")}},
		"arguments of another type": {
			Doc: "encoding/json drops the fields the type lacks: the handler runs with zero arguments (a strict Server refuses them)",
			Want: []func(Outcome) Outcome{func(Outcome) Outcome {
				return Outcome{Reply: "0", Interceptor: handled("Arith.Multiply *dispatchtest.Args {A:0 B:0}", "*int")}
			}},
		},
		"a field of another type": {Doc: "encoding/json's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding arguments of Arith.Multiply: json: cannot unmarshal string into Go struct field Args.A of type int")}},
		"a reply of another type": {Doc: "encoding/json's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding reply of Arith.Fill: json: cannot unmarshal object into Go value of type int64")}},
		"a misspelled field refused by a strict Server": {Doc: "encoding/json's words", Want: []func(Outcome) Outcome{words(
			`dispatch: decoding arguments of Arith.Multiply: json: unknown field "Bb"`)}},
		"oversize args": {
			Doc: "no bound: the call is made, the handler gets the arguments whole",
			Want: []func(Outcome) Outcome{func(Outcome) Outcome {
				return Outcome{Reply: "4194305", Interceptor: handled("Keeper.Len *dispatchtest.Blob 4194305", "*int"), Extra: "frame too large: false"}
			}},
		},
		"request over the server's frame limit": {
			Doc: "no bound: the call is made, the handler gets the arguments whole",
			Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Interceptor = handled("Big.Len *[]uint8 102400", "*int")
				o.Extra = "ok, handler ran: true"
				return o
			}},
		},
		"reply over the client's frame limit": {
			Doc:  "no bound: the reply arrives whole",
			Want: []func(Outcome) Outcome{withExtra("ok, reply of 102400")},
		},
		"error reply over the frame limit": {
			Doc:   "no bound: the error arrives whole, as its text",
			Check: wantWholeErrors,
		},
		"error reply over the client's frame limit": {
			Doc:   "no bound: the error arrives whole, as its text",
			Check: wantWholeErrors,
		},
	},
}

// handled is what the recording interceptors log of a call of what (its
// method, arguments' type and arguments) that returned a reply of type
// reply without an error.
func handled(what, reply string) []string {
	return []string{"outer> " + what + " md=map[]", "inner> " + what + " md=map[]", "<inner " + reply + " err=<nil>", "<outer " + reply + " err=<nil>"}
}

// wantWholeErrors is errorReplyTooLarge's outcome when nothing bounds the
// error: each of the four calls fails with the handler's whole error, as
// text, and the connection goes on.
func wantWholeErrors(t *testing.T, o Outcome) {
	parts := strings.Split(o.Extra, "; ")
	if assert.Len(t, parts, 5) {
		for _, p := range parts[:4] {
			msg, rest, _ := strings.Cut(p, " ")
			assert.Equal(t, "(frame too large: false, shut down: false) (code )", rest)
			assert.True(t, len(msg) > 64<<10 && strings.Trim(msg, "e") == "", "the handler's error, over 64 KiB")
		}
		assert.Equal(t, "then: ok", parts[4])
	}
}

// NetRPCJSON is a Server reached through ServeCodec with net/rpc/jsonrpc's
// codec, by a Client over jsonrpc's (DialCodec).
var NetRPCJSON = Profile{Name: "netrpc-jsonrpc", Differences: []*Difference{NoMetadata, NoDeadline, ErrorsAsText, JSONCodec, NoPreface, NoStreams}}

func init() { Profiles = append(Profiles, NetRPCGob, NetRPCJSON) }
