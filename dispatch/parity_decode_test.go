package dispatch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/dispatch"
)

// Arguments as an older or careless caller sends them: a field of another
// type, a misspelled field.
type (
	argsTextA struct {
		A string
		B int
	}
	argsMisspelt struct{ A, Bb int }
)

// The parity rows of decoding failures (parityCases): the words name the
// field, what the body holds and the type the field wants, on every path;
// a misspelled field is dropped by default and refused by a Server
// WithStrictDecoding.
var decodeCases = []parityCase{
	{"a field of another type", call("Arith.Multiply", argsTextA{A: "six", B: 7}, new(int)), wantErr(dispatch.CodeInvalidArgument,
		`dispatch: decoding arguments of Arith.Multiply: codec: cannot unmarshal into *dispatch_test.Args: field A: got string "six", want int`),
		netrpcFieldType},
	{"a reply of another type", func(t *testing.T, e *env) outcome {
		reply := new(int64)
		err := e.client.Call(context.Background(), "Arith.Fill", Args{4, 5}, reply)
		return observe(e, reply, err)
	}, func(t *testing.T, o outcome) {
		assert.Equal(t, `dispatch: decoding reply of Arith.Fill: codec: cannot unmarshal into *int64: got map of 3 entries, want int64`, o.Err)
		assert.Equal(t, "0", o.Reply, "a reply that cannot be decoded is left zero")
	}, netrpcReplyType},
	{"a misspelled field is dropped", call("Arith.Multiply", argsMisspelt{A: 6, Bb: 7}, new(int)), wantReply(ptr(0)), sameOnNetRPC},
	{"a misspelled field refused by a strict Server", func(t *testing.T, e *env) outcome {
		strict := e.again(t, strictDecoding)
		reply := intPtr(9)
		err := strict.client.Call(context.Background(), "Arith.Multiply", argsMisspelt{A: 6, Bb: 7}, reply)
		return observe(strict, reply, err)
	}, func(t *testing.T, o outcome) {
		wantErr(dispatch.CodeInvalidArgument, `dispatch: decoding arguments of Arith.Multiply: codec: cannot unmarshal into *dispatch_test.Args: unknown field Bb (dispatch_test.Args has no such field)`)(t, o)
		assert.Empty(t, o.Interceptor, "the handler is not called")
	}, netrpcStrict},
	{"a strict Server takes what fits", func(t *testing.T, e *env) outcome {
		strict := e.again(t, strictDecoding)
		reply := new(int)
		err := strict.client.Call(context.Background(), "Arith.Multiply", Args{6, 7}, reply)
		return observe(strict, reply, err)
	}, wantReply(ptr(42)), sameOnNetRPC},
}

func init() { parityCases = append(parityCases, decodeCases...) }

var (
	netrpcFieldType = differsOnNetRPC("the Server's codec is gob's: its words", gobWords(
		"dispatch: decoding arguments of Arith.Multiply: gob: wrong type (int) for received field argsTextA.A"))
	netrpcReplyType = differsOnNetRPC("the Client's codec is gob's: its words", gobWords(
		"dispatch: decoding reply of Arith.Fill: gob: decoding into local type *int64, received remote type Reply = struct { X int; S string; List []int; }"))
	netrpcStrict = differsOnNetRPC("gob has no strict decoding: it drops fields the receiver lacks, by design", func(o outcome) outcome {
		return outcome{Reply: "0", Interceptor: []string{
			"outer> Arith.Multiply *dispatch_test.Args {A:6 B:0} md=map[]", "inner> Arith.Multiply *dispatch_test.Args {A:6 B:0} md=map[]",
			"<inner *int err=<nil>", "<outer *int err=<nil>"}}
	})
)
