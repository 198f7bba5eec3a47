package transporttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// testDialNoAccept: a listener that never accepts. Dials may succeed while
// a backlog has room, but none outlives its context, and other listeners
// and dials are not held up meanwhile.
func testDialNoAccept(t *testing.T, e *env) {
	l := e.listen()
	const timeout = 50 * time.Millisecond
	blocked := false
	for i := 0; i < 300 && !blocked; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		c, err := e.tr.Dial(ctx, l.Addr().String())
		cancel()
		require.Less(t, time.Since(start), belowHandshake, "Dial %d outlived its context", i)
		if err != nil {
			require.True(t, errors.Is(err, context.DeadlineExceeded), "dial %d: %v", i, err)
			blocked = true
			continue
		}
		t.Cleanup(func() { c.Close() })
	}

	// While a Dial waits on the silent listener, another listener works.
	// The Dial waits until the other has worked, rather than for 300 ms:
	// a Listen and Dial held up by it now wait for good, where before
	// they were allowed a second, longer than the Dial they waited for.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		if c, err := e.tr.Dial(ctx, l.Addr().String()); err == nil {
			c.Close()
		}
	}()
	within(t, waitLong, "Listen and Dial elsewhere", func() {
		l2 := e.listen()
		e.echo(l2)
		c := e.dialTo(l2.Addr().String())
		requireSame(t, &transport.Message{Body: []byte("ok")}, roundTrip(t, c, &transport.Message{Body: []byte("ok")}))
	})
	cancel()
	<-waiting
}

func testDialCanceled(t *testing.T, e *env) {
	l := e.listen()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := e.tr.Dial(ctx, l.Addr().String())
	if err == nil {
		c.Close()
	}
	assert.ErrorIs(t, err, context.Canceled)
}

// testFrameTooLarge: a message over the limit fails Send with
// ErrFrameTooLarge, sends nothing, and leaves the socket open.
func testFrameTooLarge(t *testing.T, e *env) {
	e.need(TransportFrameLimiter)
	limit, _ := e.maxFrame()
	l := e.listen()
	c, s := e.dial(l)
	err := c.Send(&transport.Message{Body: make([]byte, limit+1)})
	require.ErrorIs(t, err, transport.ErrFrameTooLarge)
	err = c.Send(&transport.Message{Header: map[string]string{"h": "v"}, Body: make([]byte, limit-3)})
	require.ErrorIs(t, err, transport.ErrFrameTooLarge, "the header counts towards the limit")

	require.NoError(t, c.Send(&transport.Message{Body: []byte("fits")}))
	var m transport.Message
	require.NoError(t, s.Recv(&m))
	assert.Equal(t, "fits", string(m.Body), "an oversize message must send nothing")
}
