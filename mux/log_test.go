package mux

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/conntest"
)

// heldReads is a connection whose failed reads can be held back, so that a
// test can make its writes notice the peer's crash first.
type heldReads struct {
	net.Conn
	hold    atomic.Bool
	release chan struct{}
}

func (c *heldReads) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && c.hold.Load() {
		<-c.release
	}
	return n, err
}

// A peer that crashes (its connection reset under a session this end is
// writing to) is the expected end of a session: yamux's "Failed to write"
// line reaches the transport's logger at Debug, not as an error, and the
// stream's error says the cause once — the connection's own error under
// "mux: session closed" — while it matches what it always did.
func TestPeerCrashLogsNoError(t *testing.T) {
	rec := &conntest.Records{}
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	a, err := net.Dial("tcp", nl.Addr().String())
	require.NoError(t, err)
	b, err := nl.Accept()
	require.NoError(t, err)
	held := &heldReads{Conn: b, release: make(chan struct{})}

	ls := newServerConnAsync(t, held, WithLogger(slog.New(rec)))
	cc, err := NewClientConn(t.Context(), a)
	require.NoError(t, err)
	defer cc.Close()
	l := await(t, ls, waitLong, "NewServerConn")
	defer l.Close()
	c := dialConn(t, cc)
	s := acceptSock(t, l)
	release := sync.OnceFunc(func() { close(held.release) })
	defer release() // before l and cc close, which wait for the reader

	// The server writes every 2 ms and the client reads, until the client
	// crashes: its connection is reset, and the server's reader is held
	// back, so that a write of the session notices first.
	sent := make(chan error, 1)
	go func() {
		m := &transport.Message{Body: []byte("tick")}
		for {
			if err := s.Send(m); err != nil {
				sent <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	read := make(chan int, 1)
	var reads atomic.Int32
	go func() {
		var m transport.Message
		n := 0
		for c.Recv(&m) == nil {
			n++
			reads.Add(1)
		}
		read <- n
	}()
	// The client has read, rather than 50 ms have passed: a loaded
	// machine may not have run either end meanwhile.
	require.Eventually(t, func() bool { return reads.Load() > 0 }, waitLong, time.Millisecond, "the client read nothing")
	held.hold.Store(true)
	require.NoError(t, a.(*net.TCPConn).SetLinger(0))
	require.NoError(t, a.Close())
	select {
	case err = <-sent:
	case <-time.After(waitLong):
		t.Fatal("a Send to a crashed peer did not fail")
	}
	release()

	assert.Positive(t, <-read, "the client read before it crashed")

	shape := regexp.MustCompile(`^mux: session closed: write tcp 127\.0\.0\.1:\d+->127\.0\.0\.1:\d+: write: (connection reset by peer|broken pipe)$`)
	assert.Regexp(t, shape, err.Error(), "the cause, once")
	assert.ErrorIs(t, err, ErrSessionClosed)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorIs(t, err, io.ErrClosedPipe)
	assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE), "wraps the connection's error: %v", err)

	lines := rec.Lines(func(r slog.Record) bool { return strings.HasPrefix(r.Message, "yamux: ") })
	require.NotEmpty(t, lines, "yamux logged the failed write")
	for _, line := range lines {
		assert.True(t, strings.HasPrefix(line, "DEBUG yamux: Failed to write"), "yamux's line after a peer's crash: %s", line)
	}
}
