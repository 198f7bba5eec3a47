package mux

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSetupBacklog: a listener sets up at most setupBacklog connections at
// once. With that many silent peers in set-up, a Dial is not taken from the
// kernel's backlog and its context ends first; once the handshake timeout
// has dropped them, a Dial gets in.
//
// The handshake timeout is 5 s: the first silent peer's runs from its
// accept, and at 1 s a loaded machine could take most of it to accept
// the others, so that the first were dropped, and the Dial got in, before
// its 200 ms were over.
func TestSetupBacklog(t *testing.T) {
	l := listen(t, newTransport(t, WithHandshakeTimeout(5*time.Second)))
	addr := l.Addr().String()
	for range setupBacklog {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
	}
	ml := l.(*listener)
	require.Eventually(t, func() bool { return len(ml.setting) >= setupBacklog }, waitLong, time.Millisecond)

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := newTransport(t).Dial(ctx, addr)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a connection past the backlog was set up")

	// Once the first silent peers are dropped, a Dial gets in. (How many
	// places are taken then depends on when each silent peer was accepted,
	// so it is not asserted.)
	sock := dial(t, newTransport(t), addr)
	assert.NotNil(t, sock)
}
