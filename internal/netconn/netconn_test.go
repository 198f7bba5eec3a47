package netconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/preface/prefacetest"
)

func TestDialErrorRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	var d net.Dialer
	_, err = d.DialContext(t.Context(), "tcp", addr)
	require.Error(t, err)
	err = DialError(t.Context(), err)
	assert.ErrorIs(t, err, transport.ErrConnectionRefused)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the net package's error is kept")
}

func TestDialErrorContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The net package may report a cancelled dial without ctx's error.
	netErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("operation was canceled")}
	err := DialError(ctx, netErr)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, netErr)

	// An error that already says so is left alone.
	wrapped := fmt.Errorf("dial: %w", context.Canceled)
	assert.Same(t, wrapped, DialError(ctx, wrapped))
}

// passedDeadline is a context whose deadline has passed but whose timer
// has not yet run: Err is still nil, as it is for a moment on a loaded
// machine after the poller reported the socket's deadline.
type passedDeadline struct{ context.Context }

func (passedDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestDialErrorDeadlinePassed: a dial that timed out at ctx's deadline
// matches context.DeadlineExceeded though ctx.Err() does not say so yet;
// a timeout before the deadline, or an error that is no timeout, is left
// alone.
func TestDialErrorDeadlinePassed(t *testing.T) {
	netErr := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	err := DialError(passedDeadline{context.Background()}, netErr)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, netErr, "the net package's error is kept")

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	assert.Same(t, netErr, DialError(ctx, netErr), "the deadline is an hour away")
	other := errors.New("no route to host")
	assert.Same(t, other, DialError(passedDeadline{context.Background()}, other))
}

func TestDialErrorOther(t *testing.T) {
	other := errors.New("no route to host")
	assert.Same(t, other, DialError(t.Context(), other))
	assert.Equal(t, os.ErrDeadlineExceeded, DialError(t.Context(), os.ErrDeadlineExceeded))
}

// TestTuneOther: a connection that is not TCP is left alone.
func TestTuneOther(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	assert.NotPanics(t, func() { Tune(a) })
}

// waitLong is the timeout of a set-up that must succeed, or fail on what
// the peer sent, and bounds other waits for what must happen: generous,
// since the machine may be loaded (a TLS handshake under -race on a loaded
// machine can take a second); only a failing test waits that long.
const waitLong = 10 * time.Second

// belowTimeout tells a set-up that ended on an event (a timeout of 100 ms,
// ctx) from one that waited for its minute's timeout, by a margin no
// loaded machine eats.
const belowTimeout = 30 * time.Second

// tcpPair returns the two ends of a loopback TCP connection, closed when
// the test ends.
func tcpPair(t *testing.T) (client, server net.Conn) { return prefacetest.Loopback(t) }
