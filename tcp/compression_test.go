package tcp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/conntest"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// TestCompressionNegotiated: a body of JSON text crosses a connection
// compressed only when both ends have compression on; an end with
// WithoutCompression neither sends nor is sent a compressed frame, and
// every body arrives as it was sent.
func TestCompressionNegotiated(t *testing.T) {
	body := conntest.JSONText(256 << 10)
	for _, tc := range []struct {
		name       string
		a, b       []tcp.Option
		compressed bool
	}{
		{"both on", nil, nil, true},
		{"a off", []tcp.Option{tcp.WithoutCompression()}, nil, false},
		{"b off", nil, []tcp.Option{tcp.WithoutCompression()}, false},
		{"threshold above the body", []tcp.Option{tcp.WithCompressionThreshold(len(body) + 1)}, []tcp.Option{tcp.WithCompressionThreshold(len(body) + 1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pa, pb := net.Pipe()
			ca, cb := &conntest.CountingConn{Conn: pa}, &conntest.CountingConn{Conn: pb}
			bs := newSocketAsync(t, cb, tc.b...)
			a, err := tcp.NewSocket(t.Context(), ca, tc.a...)
			require.NoError(t, err)
			t.Cleanup(func() { a.Close() })
			b := <-bs
			for _, dir := range []struct {
				from, to transport.Socket
				wrote    *conntest.CountingConn
			}{{a, b, ca}, {b, a, cb}} {
				before := dir.wrote.Written()
				sent := make(chan error, 1)
				go func() { sent <- dir.from.Send(&transport.Message{Body: body}) }()
				var m transport.Message
				require.NoError(t, dir.to.Recv(&m))
				require.NoError(t, <-sent)
				assert.True(t, bytes.Equal(body, m.Body), "the body changed on the way")
				onWire := dir.wrote.Written() - before
				if tc.compressed {
					assert.Less(t, onWire, int64(len(body)/3), "sent uncompressed")
				} else {
					assert.Greater(t, onWire, int64(len(body)), "sent compressed")
				}
			}
		})
	}
}

// TestCompressionOlderPeer: a peer whose preface announces nothing (one of
// an earlier release, or another implementation without compression) is
// sent plain frames: flags 0, the body as it is.
func TestCompressionOlderPeer(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() { b.Close() })
	ready := newSocketAsync(t, a)
	_, err := b.Write([]byte("ZDIALt\x01\x00"))
	require.NoError(t, err)
	theirs := make([]byte, 8)
	_, err = io.ReadFull(b, theirs)
	require.NoError(t, err)
	assert.Equal(t, "ZDIALt\x01\x01", string(theirs), "the socket announces S2")
	s := <-ready
	body := conntest.JSONText(64 << 10)
	go func() { _ = s.Send(&transport.Message{Body: body}) }()
	prefix := make([]byte, 10)
	_, err = io.ReadFull(b, prefix)
	require.NoError(t, err)
	assert.Equal(t, byte(0), prefix[1], "flags")
	assert.Equal(t, uint32(len(body)), binary.BigEndian.Uint32(prefix[6:10]), "body length")
	got := make([]byte, len(body))
	_, err = io.ReadFull(b, got)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(body, got))
}

// TestCompressionThresholdRefused: a threshold below 1 fails NewSocket and
// Dial, named; WithoutCompression is the way to turn it off.
func TestCompressionThresholdRefused(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	_, err := tcp.NewSocket(context.Background(), a, tcp.WithCompressionThreshold(0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithCompressionThreshold(0): must be at least 1")
	_, err = tcp.New(tcp.WithCompressionThreshold(-1)).Dial(t.Context(), "127.0.0.1:1")
	assert.ErrorContains(t, err, "WithCompressionThreshold(-1)")
}

// BenchmarkEcho1MiB is what compression costs where bandwidth is plenty: a
// 1 MiB echo over loopback, of JSON text and of random bytes, with
// compression on (the default) and off. Its gain on a slow link is
// bench's BenchmarkSlowLink.
func BenchmarkEcho1MiB(b *testing.B) {
	random := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{}).Read(random)
	for _, mode := range []struct {
		name string
		opts []tcp.Option
	}{{"on", nil}, {"off", []tcp.Option{tcp.WithoutCompression()}}} {
		for _, p := range []struct {
			name string
			body []byte
		}{{"text", conntest.JSONText(1 << 20)}, {"random", random}} {
			b.Run(mode.name+"/"+p.name, func(b *testing.B) {
				c, s := transporttest.Pair(b, tcp.New(mode.opts...), "127.0.0.1:0")
				go transporttest.Echo(s)
				out := &transport.Message{Body: p.body}
				var in transport.Message
				b.SetBytes(int64(len(p.body)))
				for b.Loop() {
					if err := c.Send(out); err != nil {
						b.Fatal(err)
					}
					if err := c.Recv(&in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
