package httpzerodial_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// pairMisspelt is a Pair whose caller misspelled b, and pairText one whose
// caller sends a for a string.
type (
	pairMisspelt struct {
		A  int `json:"a" msgpack:"a"`
		BB int `json:"bb" msgpack:"bb"`
	}
	pairText struct {
		A string `json:"a" msgpack:"a"`
	}
)

// Over HTTP, in JSON and msgpack, on each protocol, with connect-go's
// client: a misspelled field is dropped by default and refused by a Server
// WithStrictDecoding, as on the Server's other paths; and a field of
// another type is refused in words that name it and both types.
func TestStrictDecodingHTTP(t *testing.T) {
	codecs := map[string]struct {
		opts             []connect.ClientOption
		unknown, badType string
	}{
		"json": {nil, `dispatch: decoding arguments of Calc.Add: json: unknown field "bb"`,
			`dispatch: decoding arguments of Calc.Add: json: cannot unmarshal string into Go struct field Pair.a of type int`},
		"msgpack": {[]connect.ClientOption{connect.WithCodec(msgpackCodec{})},
			`dispatch: decoding arguments of Calc.Add: codec: cannot unmarshal into *httpzerodial_test.Pair: unknown field bb (httpzerodial_test.Pair has no such field)`,
			`dispatch: decoding arguments of Calc.Add: codec: cannot unmarshal into *httpzerodial_test.Pair: field a: got string "two", want int`},
	}
	for _, p := range protocols {
		for name, cdc := range codecs {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				lenient := dispatch.NewServer()
				newCalc(t, lenient)
				strict := dispatch.NewServer(dispatch.WithStrictDecoding())
				newCalc(t, strict)
				ls, ss := serve(t, lenient), serve(t, strict)

				res, err := client[pairMisspelt, int](t, ls, p, "/Calc/Add", cdc.opts...).
					CallUnary(context.Background(), connect.NewRequest(&pairMisspelt{A: 1, BB: 2}))
				require.NoError(t, err, "dropped without the option")
				assert.Equal(t, 1, *res.Msg)

				_, err = client[pairMisspelt, int](t, ss, p, "/Calc/Add", cdc.opts...).
					CallUnary(context.Background(), connect.NewRequest(&pairMisspelt{A: 1, BB: 2}))
				assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, err))
				var ce *connect.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, cdc.unknown, ce.Message())

				res, err = client[Pair, int](t, ss, p, "/Calc/Add", cdc.opts...).
					CallUnary(context.Background(), connect.NewRequest(&Pair{A: 1, B: 2}))
				require.NoError(t, err, "what fits passes")
				assert.Equal(t, 3, *res.Msg)

				for _, ts := range []string{"lenient", "strict"} {
					srv := ls
					if ts == "strict" {
						srv = ss
					}
					_, err = client[pairText, int](t, srv, p, "/Calc/Add", cdc.opts...).
						CallUnary(context.Background(), connect.NewRequest(&pairText{A: "two"}))
					assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, err), ts)
					require.ErrorAs(t, err, &ce)
					assert.Equal(t, cdc.badType, ce.Message(), ts)
				}
			})
		}
	}
}

// curl's JSON meets the same rule.
func TestCurlStrictDecoding(t *testing.T) {
	srv := dispatch.NewServer(dispatch.WithStrictDecoding())
	newCalc(t, srv)
	ts := serve(t, srv)
	status, e := curlError(t, "-d", `{"a":2,"bb":3}`, ts.URL+"/Calc/Add")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, connectError{Code: "invalid_argument", Message: `dispatch: decoding arguments of Calc.Add: json: unknown field "bb"`}, e)

	status, e = curlError(t, "-d", `{"a":2} {"b":3}`, ts.URL+"/Calc/Add")
	assert.Equal(t, http.StatusBadRequest, status, "a second value is refused as without the option")
	assert.Equal(t, connectError{Code: "invalid_argument", Message: `dispatch: decoding arguments of Calc.Add: invalid character '{' after top-level value`}, e)

	out, code := curl(t, "--fail-with-body", "-H", "Content-Type: application/json", "-d", `{"a":2,"b":3}`, ts.URL+"/Calc/Add")
	require.Zero(t, code, out)
	assert.Equal(t, "5", out)
}
