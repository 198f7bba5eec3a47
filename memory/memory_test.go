package memory_test

import (
	"context"
	"io"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAddressSpacesAreSeparate(t *testing.T) {
	a, b := memory.New(), memory.New()
	l, err := a.Listen("svc")
	require.NoError(t, err)
	defer l.Close()
	_, err = b.Dial(context.Background(), "svc")
	require.ErrorIs(t, err, transport.ErrConnectionRefused, "one Transport saw another's listener")
	lb, err := b.Listen("svc")
	require.NoError(t, err, "the same name is free in another Transport")
	lb.Close()
}

func TestListenPicksUniqueAddresses(t *testing.T) {
	tr := memory.New()
	seen := map[string]bool{}
	for _, addr := range []string{"", ":0", "", ":0"} {
		l, err := tr.Listen(addr)
		require.NoError(t, err)
		defer l.Close()
		got := l.Addr().String()
		assert.False(t, seen[got], "address %q picked twice", got)
		seen[got] = true
		assert.Equal(t, "memory", l.Addr().Network())
	}
	// A name chosen by hand that looks like a picked one is not handed out again.
	l, err := tr.Listen("mem:5")
	require.NoError(t, err)
	defer l.Close()
	for range 3 {
		l2, err := tr.Listen("")
		require.NoError(t, err)
		defer l2.Close()
		assert.NotEqual(t, "mem:5", l2.Addr().String())
	}
	_, err = tr.Listen("mem:5")
	assert.ErrorIs(t, err, syscall.EADDRINUSE)
}

// TestListenerCloseClosesBacklog: a socket dialled but never accepted sees
// its connection end when the listener closes.
func TestListenerCloseClosesBacklog(t *testing.T) {
	tr := memory.New()
	l, err := tr.Listen("")
	require.NoError(t, err)
	c, err := tr.Dial(context.Background(), l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, l.Close())
	var m transport.Message
	require.Error(t, c.Recv(&m))
}

func TestMaxFrameSizeOption(t *testing.T) {
	tr := memory.New(memory.WithMaxFrameSize(100))
	assert.Equal(t, 100, tr.MaxFrameSize())
	assert.Equal(t, transport.DefaultMaxFrameSize, memory.New().MaxFrameSize())
}

// TestInvalidOptions: a Transport made with invalid options fails every
// Dial and Listen with one error naming each of them and its value.
func TestInvalidOptions(t *testing.T) {
	tr := memory.New(memory.WithMaxFrameSize(0), memory.WithLogger(nil), nil, memory.WithMaxFrameSize(-1))
	want := "memory: WithMaxFrameSize(0): must be between 1 and 4294967295\n" +
		"memory: WithMaxFrameSize(-1): must be between 1 and 4294967295"
	_, err := tr.Listen("svc")
	assert.EqualError(t, err, want)
	_, err = tr.Dial(context.Background(), "svc")
	assert.EqualError(t, err, want)
	assert.Equal(t, transport.DefaultMaxFrameSize, tr.MaxFrameSize(), "a refused size is not applied")
}

// TestCloseEndsDialWaitingForBacklog: a Dial waiting for room in a full
// backlog fails with transport.ErrClosed when its Transport closes, where
// it waited for its context; the sockets waiting in the backlog see their
// connection end once accepted. In a synctest bubble, so that the Dial is
// known to wait before Close.
func TestCloseEndsDialWaitingForBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memory.New()
		l, err := tr.Listen("")
		require.NoError(t, err)
		defer l.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		for range 128 { // the backlog's room
			_, err := tr.Dial(ctx, l.Addr().String())
			require.NoError(t, err)
		}
		dialled := make(chan error, 1)
		go func() {
			_, err := tr.Dial(ctx, l.Addr().String())
			dialled <- err
		}()
		synctest.Wait() // the Dial waits for room
		require.NoError(t, tr.Close())
		synctest.Wait()
		select {
		case err := <-dialled:
			assert.ErrorIs(t, err, transport.ErrClosed)
		default:
			t.Fatal("a Dial waiting for the backlog outlived the Transport's Close")
		}
		s, err := l.Accept()
		require.NoError(t, err, "the listener serves on")
		defer s.Close()
		assert.ErrorIs(t, s.Recv(&transport.Message{}), io.EOF)
		cancel()
		synctest.Wait()
	})
}
