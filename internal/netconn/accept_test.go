package netconn

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingListener fails its first fails Accepts with a temporary error
// (all of them when fails is negative), then accepts from the real
// listener; each call is reported on calls.
type failingListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
	calls chan struct{}
}

var errTemporary = errors.New("accept: too many open files")

func (l *failingListener) Accept() (net.Conn, error) {
	select {
	case l.calls <- struct{}{}:
	default:
	}
	l.mu.Lock()
	fail := l.fails != 0
	if l.fails > 0 {
		l.fails--
	}
	l.mu.Unlock()
	if fail {
		return nil, errTemporary
	}
	return l.Listener.Accept()
}

func newFailingListener(t *testing.T, fails int) *failingListener {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	return &failingListener{Listener: nl, fails: fails, calls: make(chan struct{}, 1)}
}

// logLines returns a logger and what it logged, one line per record.
func logLines() (*slog.Logger, func() []string) {
	var mu sync.Mutex
	var b strings.Builder
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return b.Write(p)
	})
	return slog.New(slog.NewTextHandler(w, nil)), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Split(strings.TrimSpace(b.String()), "\n")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestNextPause(t *testing.T) {
	var got []time.Duration
	for d := time.Duration(0); len(got) < 10; {
		d = nextPause(d)
		got = append(got, d)
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, got)
}

// TestAcceptRetries: temporary failures are logged, with the pause that
// follows each, and retried until a connection comes.
func TestAcceptRetries(t *testing.T) {
	l := newFailingListener(t, 3)
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	log, lines := logLines()
	got := Accept(l, make(chan struct{}), log, "tcp")
	require.NotNil(t, got)
	got.Close()
	logged := lines()
	require.Len(t, logged, 3)
	for i, pause := range []string{"5ms", "10ms", "20ms"} {
		assert.Contains(t, logged[i], `level=WARN msg="tcp: accept failed" addr=`+l.Addr().String())
		assert.Contains(t, logged[i], "err=\"accept: too many open files\" retry_in="+pause)
	}
}

// TestAcceptCloseEndsPause: done, which the listener's Close closes, ends a
// pause at once, however long.
func TestAcceptCloseEndsPause(t *testing.T) {
	old := minPause
	minPause = time.Hour
	t.Cleanup(func() { minPause = old })
	l := newFailingListener(t, -1)
	done := make(chan struct{})
	returned := make(chan net.Conn, 1)
	go func() { returned <- Accept(l, done, slog.New(slog.DiscardHandler), "mux") }()
	<-l.calls
	time.Sleep(20 * time.Millisecond) // likely into the pause; a done closed before it ends it alike
	close(done)
	select {
	case c := <-returned:
		assert.Nil(t, c)
	case <-time.After(waitLong): // the pause is an hour
		t.Fatal("Accept waited out its pause after the listener closed")
	}
}

// TestAcceptClosed: once the listener is closed, Accept returns nil at
// once and logs nothing, whether the net package or done says so.
func TestAcceptClosed(t *testing.T) {
	log, lines := logLines()
	l := newFailingListener(t, 0)
	l.Close()
	assert.Nil(t, Accept(l, make(chan struct{}), log, "tcp"))

	done := make(chan struct{})
	close(done)
	assert.Nil(t, Accept(newFailingListener(t, -1), done, log, "tcp"))
	assert.Equal(t, []string{""}, lines(), "nothing logged")
}
