package httpzerodial_test

import (
	"bytes"
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// TestBytesStreamUnaliased: a handler that sends []byte messages in msgpack
// (which carries them as they are) and fills its one buffer again after
// each Send — as a Send's caller may — still has every message arrive
// whole, over every protocol, with connect-go's default compression on.
// connect-go takes the bytes a codec's Marshal returns into its buffer pool
// and compresses out of it, so they must be a copy, not the handler's
// buffer (which came back with a gzip header written over it).
func TestBytesStreamUnaliased(t *testing.T) {
	const n, size = 40, 4 << 10
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			require.NoError(t, dispatch.HandleStream(srv, "Blob.Fill", func(ctx context.Context, s *dispatch.ServerStream[int, []byte]) error {
				for range s.Recv() {
					buf := make([]byte, size)
					for i := range n {
						for j := range buf {
							buf[j] = byte(i)
						}
						if err := s.Send(&buf); err != nil {
							return err
						}
					}
				}
				return nil
			}))
			ts := serve(t, srv)
			cl := client[int, []byte](t, ts, p, "/Blob/Fill", connect.WithCodec(msgpackCodec{}))
			st, err := cl.CallServerStream(context.Background(), connect.NewRequest(new(int)))
			require.NoError(t, err)
			defer st.Close()
			i := 0
			for st.Receive() {
				want := bytes.Repeat([]byte{byte(i)}, size)
				if !assert.True(t, bytes.Equal(want, *st.Msg()), "message %d arrived changed: it starts % x", i, (*st.Msg())[:min(12, len(*st.Msg()))]) {
					break
				}
				i++
			}
			require.NoError(t, st.Err())
			assert.Equal(t, n, i)
		})
	}
}
