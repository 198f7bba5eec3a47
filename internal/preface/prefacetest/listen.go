package prefacetest

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// ListenerDropsBadClients: clients that send garbage, the other protocol's
// preface, another version, or nothing within the timeout are closed by
// the listener, after its own preface, and never reach Accept; a good
// client dialling meanwhile is accepted at once. The reasons are logged,
// at Warn for a zerodial peer of the wrong kind. It returns the listener,
// still open, for checks of the transport's own.
//
// The handshake timeout is 4 s, and "at once" is within half of it: with
// 1 s, the good client was to be served within 500 ms, which a loaded
// machine need not keep.
func ListenerDropsBadClients(t *testing.T, s Suite) transport.Listener {
	const timeout = 4 * time.Second
	logs := &LogBuffer{}
	l := s.Listen(t, Config{
		Logger:           slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HandshakeTimeout: timeout,
	})
	accepted := make(chan transport.Socket, 10)
	go func() {
		for {
			sock, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- sock
		}
	}()

	sends := map[string]string{
		"garbage":    "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		s.Other.Name: s.Other.Preface,
		"version":    s.Proto.version2(),
		"silent":     "",
	}
	closed := make(chan string, len(sends))
	for name, send := range sends {
		c, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		if send != "" {
			_, err = c.Write([]byte(send))
			require.NoError(t, err)
		}
		go func() {
			// The listener's preface, then the end of the connection.
			c.SetReadDeadline(time.Now().Add(timeout + waitLong))
			b, err := io.ReadAll(c)
			if err == nil || errors.Is(err, syscall.ECONNRESET) {
				assert.Equal(t, s.Proto.Preface, string(b), name)
				closed <- name
			} else {
				closed <- name + ": not closed by the listener: " + err.Error()
			}
		}()
	}

	// While the silent client is being waited for, a good one gets in.
	start := time.Now()
	c, err := s.Dial(t, t.Context(), l.Addr().String(), Config{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Send(&transport.Message{Body: []byte("good")}))
	a, ok := <-accepted
	require.True(t, ok, "Accept failed")
	defer a.Close()
	var m transport.Message
	require.NoError(t, a.Recv(&m))
	assert.Equal(t, "good", string(m.Body))
	assert.Less(t, time.Since(start), timeout/2, "a silent client held up Accept")

	for range sends {
		select {
		case name := <-closed:
			assert.Contains(t, sends, name)
		case <-time.After(timeout + waitLong):
			t.Fatal("a bad client's connection stayed open")
		}
	}
	select {
	case a := <-accepted:
		a.Close()
		t.Fatal("a bad client reached Accept")
	default:
	}
	out := logs.String()
	assert.Contains(t, out, "speaks zerodial "+s.Other.Name+"/1, not "+s.Proto.Name+"/1")
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "sent no preface within 4s")
	assert.Contains(t, out, "is not a zerodial peer")
	return l
}

// ListenerCloseEndsPreface: Close ends the preface exchanges under way,
// closing their connections, and Accept fails afterwards.
func ListenerCloseEndsPreface(t *testing.T, s Suite) {
	l := s.Listen(t, Config{})
	silent, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer silent.Close()
	buf := make([]byte, len(s.Proto.Preface))
	_, err = io.ReadFull(silent, buf) // its set-up has begun
	require.NoError(t, err)
	assert.Equal(t, s.Proto.Preface, string(buf), "the listener's preface")

	require.NoError(t, l.Close())
	silent.SetReadDeadline(time.Now().Add(waitLong))
	_, err = silent.Read(buf)
	AssertClosedByPeer(t, err, "the connection being set up")
	_, err = l.Accept()
	assert.ErrorIs(t, err, transport.ErrClosed)
}
