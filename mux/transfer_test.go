package mux

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// TestLargeTransfer: 64 MiB through one stream in 1 MiB messages, every
// byte checked on arrival, and the stream still works afterwards.
func TestLargeTransfer(t *testing.T) {
	const total, chunk = 64 << 20, 1 << 20
	tr := newTransport(t)
	l := listen(t, tr)
	acc := acceptOne(l)
	c := dial(t, tr, l.Addr().String())
	s := await(t, acc, waitLong, "Accept")
	defer s.Close()

	// Each message's bytes come from a generator seeded with its index, so
	// a message out of place or corrupted anywhere is caught.
	fillChunk := func(b []byte, i int) {
		r := rand.New(rand.NewPCG(uint64(i), 0x6d7578))
		for j := 0; j < len(b); j += 8 {
			binary.LittleEndian.PutUint64(b[j:], r.Uint64())
		}
	}
	start := time.Now()
	sent := make(chan error, 1)
	go func() {
		out := &transport.Message{Body: make([]byte, chunk)}
		for i := range total / chunk {
			fillChunk(out.Body, i)
			if err := c.Send(out); err != nil {
				sent <- fmt.Errorf("message %d: %w", i, err)
				return
			}
		}
		sent <- nil
	}()
	want := make([]byte, chunk)
	var in transport.Message
	for i := range total / chunk {
		require.NoError(t, s.Recv(&in), "message %d", i)
		fillChunk(want, i)
		require.True(t, bytes.Equal(want, in.Body), "message %d corrupted", i)
	}
	require.NoError(t, <-sent)
	t.Logf("64 MiB in %v", time.Since(start))

	require.NoError(t, s.Send(&transport.Message{Body: []byte("done")}))
	require.NoError(t, c.Recv(&in))
	require.Equal(t, "done", string(in.Body))
}
