package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// countingJSON is jsonCodec counting what it encodes and decodes, so that a
// test can tell the messages went through it.
type countingJSON struct {
	jsonCodec
	marshal, unmarshal *atomic.Int64
}

func (c countingJSON) Marshal(v any) ([]byte, error) {
	c.marshal.Add(1)
	return json.Marshal(v)
}

func (c countingJSON) Unmarshal(data []byte, v any) error {
	c.unmarshal.Add(1)
	return json.Unmarshal(data, v)
}

// Doc is a message with what JSON and msgpack encode differently: a map, a
// byte slice (base64 in JSON), a nested pointer.
type Doc struct {
	N    int
	Tags map[string]string
	Data []byte
	Next *Doc
}

// A bidirectional stream with a codec other than msgpack (WithCodec on the
// Client, WithServerCodecs on the Server) carries its messages both ways,
// in lock-step and in bulk, on every path; the caller's messages go
// through the codec on every path, the direct one included (HandleStream).
func TestStreamWithAnotherCodec(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			var marshal, unmarshal atomic.Int64
			cdc := countingJSON{marshal: &marshal, unmarshal: &unmarshal}
			srv := dispatch.NewServer(dispatch.WithServerCodecs(cdc))
			// Grow answers each Doc with one whose N is one more, and whose
			// Next is the Doc received.
			require.NoError(t, dispatch.HandleStream(srv, "C.Grow", func(ctx context.Context, s *dispatch.ServerStream[Doc, Doc]) error {
				for d, err := range s.Recv() {
					if err != nil {
						return err
					}
					prev := *d
					prev.Tags = map[string]string{}
					for k, v := range d.Tags {
						prev.Tags[k] = v
					}
					prev.Data = append([]byte(nil), d.Data...)
					out := Doc{N: d.N + 1, Tags: map[string]string{"by": "handler"}, Data: []byte{0, 1, 2}, Next: &prev}
					if err := s.Send(&out); err != nil {
						return err
					}
				}
				return nil
			}, dispatch.Borrows()))
			c, _ := dialPath(t, p, srv, dispatch.WithCodec(cdc))

			s, err := dispatch.OpenStream[Doc, Doc](context.Background(), c, "C.Grow")
			require.NoError(t, err)
			defer s.Close()
			next, stop := iter.Pull2(s.Recv())
			defer stop()
			for i := range 10 { // lock-step
				require.NoError(t, s.Send(&Doc{N: i, Tags: map[string]string{"i": fmt.Sprint(i)}, Data: []byte{byte(i), 0xff}}))
				d, err, ok := next()
				require.True(t, ok)
				require.NoError(t, err)
				want := Doc{N: i + 1, Tags: map[string]string{"by": "handler"}, Data: []byte{0, 1, 2},
					Next: &Doc{N: i, Tags: map[string]string{"i": fmt.Sprint(i)}, Data: []byte{byte(i), 0xff}}}
				assert.Equal(t, want, *d)
			}
			sent := make(chan error, 1)
			go func() { // in bulk, while the caller receives
				for i := range 1000 {
					if err := s.Send(&Doc{N: i}); err != nil {
						sent <- err
						return
					}
				}
				sent <- s.CloseSend()
			}()
			n := 0
			for {
				d, err, ok := next()
				if !ok {
					break
				}
				require.NoError(t, err)
				require.Equal(t, n+1, d.N)
				require.Equal(t, n, d.Next.N)
				n++
			}
			require.NoError(t, <-sent)
			assert.Equal(t, 1000, n)
			// CallStream, on its fast path (a context that cannot end) and
			// the other, decodes with the same codec.
			for _, ctx := range []context.Context{context.Background(), t.Context()} {
				got, err := collect(dispatch.CallStream[Doc, Doc](ctx, c, "C.Grow", &Doc{N: 41, Data: []byte("x")}))
				require.NoError(t, err)
				assert.Equal(t, []Doc{{N: 42, Tags: map[string]string{"by": "handler"}, Data: []byte{0, 1, 2}, Next: &Doc{N: 41, Tags: map[string]string{}, Data: []byte("x")}}}, got)
			}
			assert.GreaterOrEqual(t, marshal.Load(), int64(1010), "the caller's messages are encoded with the Client's codec")
			if p != dispatch.PathShortcutDirect { // there the handler's pass by pointer
				assert.GreaterOrEqual(t, unmarshal.Load(), int64(2*1010), "both ends decode with it")
			}
		})
	}
}
