package signal_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/internal/signal"
)

// waitLong bounds a wait for something that must happen: generous, since
// the machine may be loaded; only a failing test waits that long.
const waitLong = 10 * time.Second

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestZeroValue(t *testing.T) {
	var s signal.Signal
	require.False(t, s.IsSet())
	require.NoError(t, s.Err())
	require.False(t, isClosed(s.Signal()))
}

func TestSetOnce(t *testing.T) {
	var s signal.Signal
	first, second := errors.New("first"), errors.New("second")
	require.True(t, s.Set(first))
	require.True(t, s.IsSet())
	require.Same(t, first, s.Err())

	require.False(t, s.Set(second), "a second Set is refused")
	require.False(t, s.Set(nil))
	require.Same(t, first, s.Err(), "the first error stays")
	require.True(t, isClosed(s.Signal()))
}

func TestSetNil(t *testing.T) {
	var s signal.Signal
	require.True(t, s.Set(nil))
	require.True(t, s.IsSet())
	require.NoError(t, s.Err())
	require.False(t, s.Set(errors.New("later")), "set with nil is set")
	require.NoError(t, s.Err())
}

func TestSignalBeforeSet(t *testing.T) {
	var s signal.Signal
	c := s.Signal()
	require.False(t, isClosed(c))
	require.Equal(t, c, s.Signal(), "the same channel until set")

	done := make(chan error)
	go func() {
		<-c
		done <- s.Err()
	}()
	err := errors.New("closed")
	require.True(t, s.Set(err))
	select {
	case got := <-done:
		require.Same(t, err, got, "Err is visible to whoever the channel woke")
	case <-time.After(waitLong):
		t.Fatal("Set did not close the channel asked for before it")
	}
	require.Equal(t, c, s.Signal(), "the channel asked for before Set stays the one")
}

func TestSignalAfterSet(t *testing.T) {
	var a, b signal.Signal
	require.True(t, a.Set(nil))
	require.True(t, b.Set(nil))
	require.True(t, isClosed(a.Signal()))
	require.True(t, isClosed(b.Signal()))
}

func TestConcurrentSet(t *testing.T) {
	for range 50 {
		var s signal.Signal
		const n = 8
		errs := make([]error, n)
		won := make([]bool, n)
		var start, wg sync.WaitGroup
		start.Add(1)
		var waiters sync.WaitGroup
		for range n {
			waiters.Add(1)
			go func() {
				defer waiters.Done()
				start.Wait()
				<-s.Signal()
				require.True(t, s.IsSet())
			}()
		}
		for i := range n {
			errs[i] = fmt.Errorf("setter %d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				start.Wait()
				won[i] = s.Set(errs[i])
			}()
		}
		start.Done()
		wg.Wait()
		waiters.Wait()

		winners := 0
		for i := range n {
			if won[i] {
				winners++
				require.Same(t, errs[i], s.Err(), "Err is the winner's")
			}
		}
		require.Equal(t, 1, winners)
	}
}

// TestAllocs pins the lazy channel: a Signal nobody selects on allocates
// nothing, set or not, and one asked for after Set shares the closed one.
func TestAllocs(t *testing.T) {
	err := errors.New("x")
	sigs := make([]signal.Signal, 101) // AllocsPerRun runs once more than asked
	i := 0
	require.Zero(t, testing.AllocsPerRun(100, func() {
		s := &sigs[i]
		i++
		_ = s.IsSet()
		_ = s.Err()
		s.Set(err)
		_ = s.IsSet()
		<-s.Signal()
	}))
	var s signal.Signal
	_ = s.Signal()
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = s.Signal() }), "made once")
}

func ExampleSignal() {
	var closed signal.Signal
	go closed.Set(errors.New("client is closed"))

	<-closed.Signal()
	fmt.Println(closed.IsSet(), closed.Err())
	fmt.Println(closed.Set(errors.New("again")), closed.Err())
	// Output:
	// true client is closed
	// false client is closed
}
