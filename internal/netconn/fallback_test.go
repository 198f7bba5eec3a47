package netconn

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/internal/deadlinerec"
	"github.com/zerodial/transport/internal/preface"
	"github.com/zerodial/transport/internal/testcert"
)

func newFallback(t *testing.T) *fallback.Listener {
	fb, err := fallback.New()
	require.NoError(t, err)
	t.Cleanup(func() { fb.Close() })
	return fb
}

// TestServerFallback: with a Fallback, a zerodial client is set up as
// without one, and a foreign client comes back as a *Foreign whose
// connection replays every byte it sent, classified, with no deadline left
// and nothing written to the client.
func TestServerFallback(t *testing.T) {
	setup := Setup{Proto: preface.TCP, Timeout: waitLong, Fallback: newFallback(t)}

	c, s := tcpPair(t)
	srv := serve(t.Context(), setup, s)
	_, _, err := Setup{Proto: preface.TCP, Timeout: waitLong}.Client(t.Context(), c, "server")
	require.NoError(t, err)
	require.NoError(t, (<-srv).err)

	c, s = tcpPair(t)
	const sent = "POST /rpc HTTP/1.1\r\n"
	go func() {
		// Byte by byte: the listener reads on until the kind is known.
		for i := range len(sent) {
			c.Write([]byte(sent[i : i+1]))
			time.Sleep(time.Millisecond)
		}
	}()
	rec := &deadlinerec.Conn{Conn: s}
	r := <-serve(t.Context(), setup, rec)
	var f *Foreign
	require.True(t, errors.As(r.err, &f), "%v", r.err)
	assert.Nil(t, r.c)
	assert.Equal(t, fallback.HTTP, f.Kind)
	assert.Equal(t, fallback.HTTP, fallback.KindOf(f.Conn))
	assert.Equal(t, "not zerodial: http", f.Error())
	buf := make([]byte, len(sent))
	_, err = io.ReadFull(f.Conn, buf)
	require.NoError(t, err)
	assert.Equal(t, sent, string(buf))

	// No deadline is left: the last one set on the connection is none.
	// (A read that outwaited the set-up's deadline took a timeout short
	// enough to wait out, which a loaded machine could not keep to.)
	assert.True(t, rec.ReadDeadline().IsZero(), "the set-up left a deadline on the connection: %v", rec.ReadDeadline())

	f.Conn.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitLong)))
	n, err := c.Read(buf)
	assert.Zero(t, n, "the foreign client was sent %q", buf[:n])
	assert.ErrorIs(t, err, io.EOF)
}

// TestServerFallbackBounded: the handshake timeout bounds the preface and
// the reading of the kind together, and ctx cuts the reading short.
func TestServerFallbackBounded(t *testing.T) {
	setup := Setup{Proto: preface.TCP, Timeout: 200 * time.Millisecond, Fallback: newFallback(t)}
	c, s := tcpPair(t)
	_, err := c.Write([]byte("GE"))
	require.NoError(t, err)
	r := <-serve(t.Context(), setup, s)
	assert.ErrorIs(t, r.err, fallback.ErrUndecided)
	assert.ErrorIs(t, r.err, os.ErrDeadlineExceeded)
	assert.Same(t, s, r.c, "the caller closes the connection")

	setup.Timeout = time.Minute
	c, s = tcpPair(t)
	_, err = c.Write([]byte("GE"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	r = <-serve(ctx, setup, s)
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.ErrorIs(t, r.err, fallback.ErrUndecided)
}

// TestServerFallbackALPN: over TLS, a client that negotiated an ALPN
// protocol is handed on as the *tls.Conn itself, not a byte read; one that
// negotiated none is read inside TLS.
func TestServerFallbackALPN(t *testing.T) {
	serverCfg, clientCfg := testcert.Configs(t)
	serverCfg.NextProtos = []string{"h2", "http/1.1"}
	setup := Setup{Proto: preface.TCP, TLS: serverCfg, Timeout: waitLong, Fallback: newFallback(t)}

	clientCfg.ServerName = "127.0.0.1"
	c, s := tcpPair(t)
	h2 := clientCfg.Clone()
	h2.NextProtos = []string{"h2"}
	tc := tls.Client(c, h2)
	go tc.Handshake()
	r := <-serve(t.Context(), setup, s)
	var f *Foreign
	require.True(t, errors.As(r.err, &f), "%v", r.err)
	assert.IsType(t, &tls.Conn{}, f.Conn)
	assert.Equal(t, fallback.HTTP2, f.Kind)
	f.Conn.Close()

	c, s = tcpPair(t)
	tc = tls.Client(c, clientCfg)
	go tc.Write([]byte("[1]"))
	r = <-serve(t.Context(), setup, s)
	require.True(t, errors.As(r.err, &f), "%v", r.err)
	assert.Equal(t, fallback.JSON, f.Kind)
	buf := make([]byte, 3)
	_, err := io.ReadFull(f.Conn, buf)
	require.NoError(t, err)
	assert.Equal(t, "[1]", string(buf))
	f.Conn.Close()
}
