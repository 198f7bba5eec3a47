package dispatchtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/dispatch"
)

// Arguments as an older or careless caller sends them: a field of another
// type, a misspelled field.
type (
	// ArgsTextA is Args with A of another type.
	ArgsTextA struct {
		A string
		B int
	}
	// ArgsMisspelt is Args with B misspelt.
	ArgsMisspelt struct{ A, Bb int }
)

// The cases of decoding failures: the words name the field, what the body
// holds and the type the field wants, on every path; a misspelled field
// is dropped by default and refused by a Server WithStrictDecoding.
var decodeCases = []testCase{
	{name: "a field of another type", run: call("Arith.Multiply", ArgsTextA{A: "six", B: 7}, new(int)), check: wantErr(dispatch.CodeInvalidArgument,
		`dispatch: decoding arguments of Arith.Multiply: codec: cannot unmarshal into *dispatchtest.Args: field A: got string "six", want int`)},
	{name: "a reply of another type", run: func(t *testing.T, e *env) Outcome {
		reply := new(int64)
		err := e.call(context.Background(), "Arith.Fill", Args{4, 5}, reply)
		return observe(e, reply, err)
	}, check: func(t *testing.T, o Outcome) {
		assert.Equal(t, `dispatch: decoding reply of Arith.Fill: codec: cannot unmarshal into *int64: got map of 3 entries, want int64`, o.Err)
		assert.Equal(t, "0", o.Reply, "a reply that cannot be decoded is left zero")
	}},
	{name: "a misspelled field is dropped", run: call("Arith.Multiply", ArgsMisspelt{A: 6, Bb: 7}, new(int)), check: wantReply(ptr(0))},
	{name: "a misspelled field refused by a strict Server", run: func(t *testing.T, e *env) Outcome {
		strict := e.again(Limits{}, dispatch.WithStrictDecoding())
		reply := intPtr(9)
		err := strict.call(context.Background(), "Arith.Multiply", ArgsMisspelt{A: 6, Bb: 7}, reply)
		return observe(strict, reply, err)
	}, check: func(t *testing.T, o Outcome) {
		wantErr(dispatch.CodeInvalidArgument, `dispatch: decoding arguments of Arith.Multiply: codec: cannot unmarshal into *dispatchtest.Args: unknown field Bb (dispatchtest.Args has no such field)`)(t, o)
		assert.Empty(t, o.Interceptor, "the handler is not called")
	}},
	{name: "a strict Server takes what fits", run: func(t *testing.T, e *env) Outcome {
		strict := e.again(Limits{}, dispatch.WithStrictDecoding())
		reply := new(int)
		err := strict.call(context.Background(), "Arith.Multiply", Args{6, 7}, reply)
		return observe(strict, reply, err)
	}, check: wantReply(ptr(42))},
}
