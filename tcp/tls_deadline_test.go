package tcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/tcp"
)

// TestTLSWriteDeadlinePastLeavesSocketUsable: over TLS, a write deadline
// already past fails Send, SendAsync and Queue with ErrTimeout, sends
// nothing and leaves the socket usable once the deadline is cleared, as
// over plain TCP (transport.Socket's contract). The socket had passed the
// write to the tls.Conn, whose failed write breaks it for good, and closed
// the socket; transporttest's WriteDeadlinePast found it once the suite
// ran over TLS.
func TestTLSWriteDeadlinePastLeavesSocketUsable(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	l, err := tcp.New(tcp.WithTLS(serverCfg)).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := acceptOne(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := tcp.New(tcp.WithTLS(clientCfg))
	defer tr.Close()
	c, err := tr.Dial(ctx, l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s := <-accepted
	require.NotNil(t, s)
	defer s.Close()

	late := &transport.Message{Body: []byte("late")}
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
	assert.ErrorIs(t, c.Send(late), transport.ErrTimeout, "Send")
	assert.ErrorIs(t, c.(transport.AsyncSender).SendAsync(late), transport.ErrTimeout, "SendAsync")
	_, err = c.(transport.BatchSender).Queue(late)
	assert.ErrorIs(t, err, transport.ErrTimeout, "Queue")
	require.NoError(t, c.SetDeadline(time.Now().Add(-time.Second)))
	assert.ErrorIs(t, c.Send(late), transport.ErrTimeout, "Send past SetDeadline's deadline")

	require.NoError(t, c.SetDeadline(time.Time{}))
	require.NoError(t, c.Send(&transport.Message{Body: []byte("on time")}))
	var m transport.Message
	require.NoError(t, s.Recv(&m))
	assert.Equal(t, "on time", string(m.Body), "the late messages sent nothing")
}
