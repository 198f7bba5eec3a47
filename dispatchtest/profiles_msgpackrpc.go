package dispatchtest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/dispatch"
)

// GoMsgpackCodec: the codec at both ends is HashiCorp's msgpackrpc, over
// go-msgpack: its words where a body does not decode; it drops the fields
// a type lacks, a map of another type's fields included (unless its
// handle is made with ErrorIfNoField, the program's choice); the client's
// codec bounds nothing it reads, and ServeConn bounds a request by the
// wire's frame limit, not by a smaller one of the case's.
var GoMsgpackCodec = &Difference{
	Name: "go-msgpack's codec",
	Doc:  "HashiCorp's msgpackrpc codec (go-msgpack) at both ends: its words for what does not decode; it drops the fields a type lacks, a map of another type's fields included, and has no strict decoding (a handle with ErrorIfNoField is the program's choice); the client's codec bounds nothing it reads, and ServeConn bounds a request by the frame limit (4 MiB), not a smaller one",
	Effects: map[string]Effect{
		"wrong args type": {Doc: "go-msgpack's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding arguments of Arith.Multiply: msgpack decode error [pos 36]: only encoded map or array can be decoded into a struct")}},
		"arguments of another type": {
			Doc: "go-msgpack drops the fields the type lacks: the handler runs with zero arguments",
			Want: []func(Outcome) Outcome{func(Outcome) Outcome {
				return Outcome{Reply: "0", Interceptor: handled("Arith.Multiply *dispatchtest.Args {A:0 B:0}", "*int")}
			}},
		},
		"a field of another type": {Doc: "go-msgpack's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding arguments of Arith.Multiply: msgpack decode error [pos 39]: cannot decode signed integer: unrecognized descriptor byte: a3/string|bytes")}},
		"a reply of another type": {Doc: "go-msgpack's words", Want: []func(Outcome) Outcome{words(
			"dispatch: decoding reply of Arith.Fill: msgpack decode error [pos 39]: cannot decode signed integer: unrecognized descriptor byte: 83/map")}},
		"a misspelled field refused by a strict Server": {
			Doc: "msgpackrpc's default handle drops the fields its receiver lacks: the call succeeds",
			Want: []func(Outcome) Outcome{func(Outcome) Outcome {
				return Outcome{Reply: "0", Interceptor: handled("Arith.Multiply *dispatchtest.Args {A:6 B:0}", "*int")}
			}},
		},
		"oversize args": {
			Doc: "refused by ServeConn's bound on a request, in go-msgpack's words (invalid_argument), or the connection's reset overtakes that answer",
			Check: func(t *testing.T, o Outcome) {
				assert.Equal(t, "frame too large: false", o.Extra)
				assert.Empty(t, o.Interceptor, "the handler never runs")
				if o.Code == dispatch.CodeInvalidArgument {
					assert.Regexp(t, `^dispatch: decoding arguments of Keeper.Len: msgpack decode error \[pos \d+\]: transport: frame too large: a net/rpc request unfinished after 4194304 bytes, limit 4194304$`, o.Err)
					return
				}
				assert.Equal(t, "Keeper.Len over <path>: connection is shut down: the server closed the connection", o.Err)
			},
		},
		"request over the server's frame limit": {
			Doc: "ServeConn bounds a request by the frame limit, not the case's smaller one: the handler gets the arguments whole",
			Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Interceptor = handled("Big.Len *[]uint8 102400", "*int")
				o.Extra = "ok, handler ran: true"
				return o
			}},
		},
		"reply over the client's frame limit": {
			Doc:  "the client's codec bounds nothing: the reply arrives whole",
			Want: []func(Outcome) Outcome{withExtra("ok, reply of 102400")},
		},
		"error reply over the frame limit": {
			Doc:   "ServeConn cannot measure what its codec writes, and the client's codec bounds nothing: the error arrives whole, as its text",
			Check: wantWholeErrors,
		},
		"error reply over the client's frame limit": {
			Doc:   "the client's codec bounds nothing: the error arrives whole, as its text",
			Check: wantWholeErrors,
		},
	},
}

// MsgpackRPC is HashiCorp's net-rpc-msgpackrpc: the Server on one port (a
// tcp listener's fallback hands the connections that open with msgpack to
// ServeConn, with msgpackrpc's server codec), called by a Client over
// msgpackrpc's client codec (DialCodec). bench's TestConformance binds it.
var MsgpackRPC = Profile{Name: "msgpackrpc", Differences: []*Difference{
	NoMetadata, NoDeadline, ErrorsAsText, GoMsgpackCodec, NoPreface, NoStreams}}

func init() { Profiles = append(Profiles, MsgpackRPC) }
