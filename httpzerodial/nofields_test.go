package httpzerodial_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// A JSON object none of whose keys names a field of the type is a message
// of another type, refused as msgpack's map is, in a stream's messages as
// in a call's arguments (the suite's "arguments of another type" is the
// call's); keys of the type beside unknown ones, and {}, are taken.
func TestJSONNoFieldsMatchedStream(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	for _, p := range []protocol{protocols[0], protocols[2]} {
		cl := client[[]byte, []byte](t, ts, p, "/Calc/Count", connect.WithCodec(rawCodec{}))
		st, err := cl.CallServerStream(context.Background(), connect.NewRequest(new([]byte(`{"x":1,"y":2}`))))
		require.NoError(t, err)
		assert.False(t, st.Receive())
		assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, st.Err()), p.name)
		var ce *connect.Error
		require.ErrorAs(t, st.Err(), &ce)
		assert.Equal(t, `dispatch: decoding a message of Calc.Count: codec: no fields matched: the object's keys ["x" "y"] name no field of type httpzerodial_test.Pair`, ce.Message(), p.name)
		require.NoError(t, st.Close())

		for _, body := range []string{`{"a":2,"x":1}`, `{}`} {
			st, err := cl.CallServerStream(context.Background(), connect.NewRequest(new([]byte(body))))
			require.NoError(t, err)
			for st.Receive() {
			}
			assert.NoError(t, st.Err(), "%s %s", p.name, body)
			require.NoError(t, st.Close())
		}
	}
}
