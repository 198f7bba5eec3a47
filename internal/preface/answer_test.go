package preface

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/deadlinerec"
)

// TestAnswer: a zerodial dialler, which writes and reads at once, sets up
// with a listener that reads first, over TCP and over net.Pipe (whose
// writes wait for the reader); the bytes after the preface are left for the
// next reader, and the deadline is cleared.
func TestAnswer(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) (net.Conn, net.Conn){
		"loopback": pair,
		"pipe": func(t *testing.T) (net.Conn, net.Conn) {
			a, b := net.Pipe()
			t.Cleanup(func() { a.Close(); b.Close() })
			return a, b
		},
	} {
		t.Run(name, func(t *testing.T) {
			client, server := mk(t)
			dialled := make(chan error, 1)
			go func() {
				_, err := Exchange(t.Context(), client, Of(TCP), "server", waitLong)
				if err == nil {
					_, err = client.Write([]byte("after"))
				}
				dialled <- err
			}()
			got, _, err := Answer(t.Context(), server, Of(TCP), "client", waitLong)
			require.NoError(t, err)
			assert.Equal(t, Of(TCP).Append(nil), got)
			buf := make([]byte, 5)
			_, err = io.ReadFull(server, buf)
			require.NoError(t, err)
			assert.Equal(t, "after", string(buf))
			require.NoError(t, <-dialled)
		})
	}
}

// TestAnswerForeign: a peer whose first byte departs from the magic is
// told apart at once, though it waits for an answer; it receives nothing
// from this end, the bytes read are returned for replay, and the
// connection keeps its deadline so that the caller reads on within the same
// bound.
//
// The timeout is a minute, and the deadline kept is the one recorded: with
// 300 ms, decided "at once" meant within 250 ms, which a loaded machine
// need not keep.
func TestAnswerForeign(t *testing.T) {
	client, conn := pair(t)
	server := &deadlinerec.Conn{Conn: conn}
	_, err := client.Write([]byte(`{"method"`))
	require.NoError(t, err)
	start := time.Now()
	got, _, err := Answer(t.Context(), server, Of(TCP), "client", time.Minute)
	assert.Less(t, time.Since(start), belowTimeout, "decided at the first byte, not at the timeout")
	require.Error(t, err)
	assert.True(t, Foreign(err))
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.False(t, Mismatch(err))
	require.NotEmpty(t, got)
	assert.Equal(t, `{"method"`[:len(got)], string(got))
	assert.LessOrEqual(t, len(got), Len)

	// The deadline stays: the exchange's, a minute from its start.
	if d := server.ReadDeadline(); d.Before(start.Add(time.Minute)) || d.After(time.Now().Add(time.Minute)) {
		t.Errorf("read deadline %v, not the exchange's: a minute from %v", d, start)
	}

	// Nothing was written to the foreign peer: once the listener's end
	// closes, the peer reads the end of the stream and no byte.
	rest := make([]byte, 64)
	_, err = io.ReadAtLeast(server, rest, len(`{"method"`)-len(got)) // unread, they would reset the connection
	require.NoError(t, err)
	server.Close()
	require.NoError(t, client.SetReadDeadline(time.Now().Add(waitLong)))
	n, err := client.Read(rest)
	assert.Zero(t, n, "the foreign peer received %q", rest[:n])
	assert.ErrorIs(t, err, io.EOF)
}

// TestAnswerMismatch: a zerodial peer of another protocol is answered, so
// that it learns what this end speaks, and refused.
func TestAnswerMismatch(t *testing.T) {
	client, server := pair(t)
	_, err := client.Write(Of(Mux).Append(nil))
	require.NoError(t, err)
	got, _, err := Answer(t.Context(), server, Of(TCP), "client", waitLong)
	assert.EqualError(t, err, "tcp: client speaks zerodial mux/1, not tcp/1")
	assert.True(t, Mismatch(err))
	assert.False(t, Foreign(err))
	assert.Equal(t, Of(Mux).Append(nil), got)
	buf := make([]byte, Len)
	_, err = io.ReadFull(client, buf)
	require.NoError(t, err)
	assert.Equal(t, Of(TCP).Append(nil), buf)
}

// TestAnswerSilent: a peer that sends nothing, or part of the magic, and
// waits is refused at the timeout, and is not foreign: nothing says what it
// speaks. One that closes first is refused at once.
func TestAnswerSilent(t *testing.T) {
	for _, sent := range []string{"", "ZDI"} {
		client, server := pair(t)
		_, err := client.Write([]byte(sent))
		require.NoError(t, err)
		got, _, err := Answer(context.Background(), server, Of(TCP), "client", 100*time.Millisecond)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "%q", sent)
		assert.ErrorIs(t, err, transport.ErrProtocol)
		assert.False(t, Foreign(err))
		assert.Equal(t, sent, string(got))
	}

	client, server := pair(t)
	client.Close()
	_, _, err := Answer(t.Context(), server, Of(TCP), "client", time.Minute)
	assert.ErrorIs(t, err, io.EOF)
	assert.False(t, Foreign(err))
}

// TestAnswerContext: ctx cuts the read short, and the error says so.
func TestAnswerContext(t *testing.T) {
	_, server := pair(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, _, err := Answer(ctx, server, Of(TCP), "client", time.Minute)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, Foreign(err))
}

// TestAnswerWriteFails: a zerodial preface whose answer cannot be written
// fails with the write's error, not as a peer's fault.
func TestAnswerWriteFails(t *testing.T) {
	client, server := pair(t)
	_, err := client.Write(Of(TCP).Append(nil))
	require.NoError(t, err)
	_, _, err = Answer(t.Context(), failingWrites{server}, Of(TCP), "client", waitLong)
	assert.EqualError(t, err, "tcp: preface with client: write: broken")
	assert.NotErrorIs(t, err, transport.ErrProtocol)
	assert.False(t, errors.Is(err, ErrForeign))
}
