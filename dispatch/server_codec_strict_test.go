package dispatch_test

import (
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// serveConnJSON serves srv through ServeConn with net/rpc/jsonrpc's codec
// on a loopback listener, until the test ends, and returns its address.
func serveConnJSON(t testing.TB, srv *dispatch.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				srv.ServeConn(conn, func(rwc io.ReadWriteCloser) rpc.ServerCodec { return jsonrpc.NewServerCodec(rwc) })
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		srv.Close()
		wg.Wait()
	})
	return l.Addr().String()
}

// WithStrictDecoding reaches net/rpc/jsonrpc's codec, through ServeCodec
// and ServeConn: a JSON-RPC client's misspelled field is refused in
// encoding/json's words, which name it, where a Server without the option
// drops it. The client is the standard library's.
func TestStrictDecodingJSONRPC(t *testing.T) {
	serves := map[string]func(t testing.TB, srv *dispatch.Server) string{
		"ServeCodec": func(t testing.TB, srv *dispatch.Server) string {
			return serveNetRPC(t, srv, func(c net.Conn) rpc.ServerCodec { return jsonrpc.NewServerCodec(c) })
		},
		"ServeConn": serveConnJSON,
	}
	for name, serve := range serves {
		t.Run(name, func(t *testing.T) {
			call := func(t *testing.T, strict bool, args any) (int, error) {
				var opts []dispatch.ServerOption
				if strict {
					opts = append(opts, dispatch.WithStrictDecoding())
				}
				srv := dispatch.NewServer(opts...)
				require.NoError(t, srv.Register(newArith()))
				c, err := jsonrpc.Dial("tcp", serve(t, srv))
				require.NoError(t, err)
				defer c.Close()
				var reply int
				err = c.Call("Arith.Multiply", args, &reply)
				return reply, err
			}
			misspelt := map[string]int{"A": 6, "Bb": 7}

			reply, err := call(t, false, misspelt)
			require.NoError(t, err, "dropped without the option")
			assert.Equal(t, 0, reply)

			_, err = call(t, true, misspelt)
			assert.Equal(t, rpc.ServerError(`dispatch: decoding arguments of Arith.Multiply: json: unknown field "Bb"`), err)

			reply, err = call(t, true, Args{6, 7})
			require.NoError(t, err, "what fits passes")
			assert.Equal(t, 42, reply)

			_, err = call(t, true, map[string]any{"A": "six"})
			assert.Equal(t, rpc.ServerError(`dispatch: decoding arguments of Arith.Multiply: json: cannot unmarshal string into Go struct field Args.A of type int`), err,
				"a field of another type, in encoding/json's words, which name the field and both types")
		})
	}
}
