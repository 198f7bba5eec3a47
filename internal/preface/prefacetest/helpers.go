package prefacetest

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// RawListener accepts plain TCP connections on a free loopback port and
// hands each to serve, on a goroutine, closing it when serve returns; it
// stands for a peer that is not a zerodial listener. It returns the
// address. The listener is closed, and the goroutines waited for, when the
// test ends.
func RawListener(t *testing.T, serve func(net.Conn)) string {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		nl.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := nl.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	return nl.Addr().String()
}

// waitLong bounds a wait for what must happen: generous, since the machine
// may be loaded; only a failing test waits that long.
const waitLong = 20 * time.Second

// belowHandshake tells a Dial that returned at its ctx's end, or at a short
// handshake timeout, from one that waited for the default one
// (transport.DefaultHandshakeTimeout, 10 s) or for ever, by a margin no
// loaded machine eats.
const belowHandshake = transport.DefaultHandshakeTimeout / 2

// UntilClosed reads from c, and drops what it reads, until the peer
// closes it: a silent peer's serve for RawListener.
func UntilClosed(c net.Conn) { io.Copy(io.Discard, c) }

// AssertClosedByPeer checks that err, from a read, says the peer closed
// the connection: EOF, or a reset when it closed with bytes unread.
func AssertClosedByPeer(t *testing.T, err error, what string) {
	t.Helper()
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "%s is still open: %v", what, err)
}

// LogBuffer collects a logger's output, for slog.NewTextHandler, from
// every goroutine that logs.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Loopback returns the two ends of a loopback TCP connection, closed when
// the test ends: a connection whose writes, unlike net.Pipe's, do not wait
// for the reader, as with the peers the transports meet.
func Loopback(t *testing.T) (client, server net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		ch <- c
	}()
	client, err = net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	server = <-ch
	require.NotNil(t, server)
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}
