package httpzerodial

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A dial in progress when the connection closes ends then, as the calls
// waiting on it must (net/http dials apart from the request's context):
// here a dial whose name lookup hangs, which held a call past Close until
// the system's connect timeout.
func TestConnDialerCloseEndsDial(t *testing.T) {
	done, stop := context.WithCancel(context.Background())
	d := &connDialer{done: done}
	looking, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	var once sync.Once
	// The lookup's server never answers, and its own timeout is not
	// waited for: only the dial's context may end the dial.
	d.d.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		once.Do(func() { close(looking) })
		<-release
		return nil, net.ErrClosed
	}}
	errc := make(chan error, 1)
	go func() {
		_, err := d.dial(context.Background(), "tcp", "zerodial.test:80")
		errc <- err
	}()
	<-looking
	stop() // the httpConn's Close
	d.close()
	select {
	case err := <-errc:
		require.Error(t, err)
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the dial was still in progress after Close")
	}
}
