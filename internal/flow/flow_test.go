package flow_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/internal/flow"
)

// waitLong bounds a wait for something that must happen: generous, since
// the machine may be loaded; only a failing test waits that long.
const waitLong = 10 * time.Second

var errWouldWait = errors.New("would wait")

// now is a Waiter that never waits: where Acquire, Lend or Next would
// block, they return errWouldWait, so that a test sees exactly when the
// rule says wait without any goroutine.
type now struct{}

func (now) Check() error               { return nil }
func (now) Wait(<-chan struct{}) error { return errWouldWait }

// wouldWait asserts that err is now's: the call would have waited.
func wouldWait(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, errWouldWait)
}

// stopper is a Waiter that blocks until ch fires or stop is closed (then
// with err), and says on waiting, once per wait, that it is waiting.
type stopper struct {
	stop    chan struct{}
	err     error
	waiting chan struct{}
}

func newStopper(err error) *stopper {
	return &stopper{stop: make(chan struct{}), err: err, waiting: make(chan struct{}, 16)}
}

func (w *stopper) Check() error {
	select {
	case <-w.stop:
		return w.err
	default:
		return nil
	}
}

func (w *stopper) Wait(ch <-chan struct{}) error {
	w.waiting <- struct{}{}
	select {
	case <-ch:
		return nil
	case <-w.stop:
		return w.err
	}
}

// blocked waits until w is waiting.
func (w *stopper) blocked(t *testing.T) {
	t.Helper()
	select {
	case <-w.waiting:
	case <-time.After(waitLong):
		t.Fatal("never waited")
	}
}

func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLong):
		t.Fatal("still waiting")
		return nil
	}
}

// The sending rule: a message goes when it fits in what the window has
// left, or when at most half the window is outstanding, whatever its size;
// an empty message counts 1.
func TestCreditRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		out    int // acquired first
		n      int
		waits  bool
		window int
	}{
		{"fits", 4, 6, false, 10},
		{"fits exactly", 0, 10, false, 10},
		{"over, more than half outstanding", 6, 5, true, 10},
		{"over, half outstanding", 5, 100, false, 10},
		{"larger than the window, none outstanding", 0, 1000, false, 10},
		{"empty counts 1", 10, 0, true, 10},
		{"empty fits in what is left", 9, 0, false, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := flow.NewCredit(tc.window, true)
			if tc.out > 0 {
				require.NoError(t, c.Acquire(tc.out, now{}))
			}
			err := c.Acquire(tc.n, now{})
			if tc.waits {
				wouldWait(t, err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// A window not yet announced is one of 0: one message may be outstanding;
// the first Grant is the window, not bytes returned.
func TestCreditUnknownWindow(t *testing.T) {
	c := flow.NewCredit(0, false)
	require.NoError(t, c.Acquire(1000, now{}))
	wouldWait(t, c.Acquire(1, now{}))
	c.Grant(100) // the window: the 1000 are still outstanding
	wouldWait(t, c.Acquire(1, now{}))
	c.Grant(950) // 50 outstanding: half the window
	require.NoError(t, c.Acquire(500, now{}))
	wouldWait(t, c.Acquire(1, now{}))
}

// Unacquire and Grant return credit, never below none outstanding.
func TestCreditReturn(t *testing.T) {
	c := flow.NewCredit(10, true)
	require.NoError(t, c.Acquire(10, now{}))
	wouldWait(t, c.Acquire(1, now{}))
	c.Unacquire(4) // 6 outstanding
	wouldWait(t, c.Acquire(5, now{}))
	require.NoError(t, c.Acquire(4, now{})) // 10
	c.Grant(5)                              // 5
	require.NoError(t, c.Acquire(100, now{}))

	// Returning more than is outstanding leaves none, not a negative
	// count that would let more than the window through.
	c.Unacquire(1000)
	require.NoError(t, c.Acquire(10, now{}))
	wouldWait(t, c.Acquire(1, now{}))
	c.Grant(1000)
	require.NoError(t, c.Acquire(10, now{}))
	wouldWait(t, c.Acquire(1, now{}))
}

// A sender without credit waits, and a grant wakes it.
func TestCreditWokenByGrant(t *testing.T) {
	for _, give := range []struct {
		name string
		back func(*flow.Credit)
	}{
		{"grant", func(c *flow.Credit) { c.Grant(10) }},
		{"unacquire", func(c *flow.Credit) { c.Unacquire(10) }},
	} {
		t.Run(give.name, func(t *testing.T) {
			c := flow.NewCredit(10, true)
			require.NoError(t, c.Acquire(10, now{}))
			w := newStopper(nil)
			done := make(chan error, 1)
			go func() { done <- c.Acquire(8, w) }()
			w.blocked(t)
			require.Empty(t, done, "acquired without credit")
			give.back(c)
			require.NoError(t, result(t, done))
			wouldWait(t, c.Acquire(3, now{})) // 8 outstanding of 10
		})
	}
}

// Abort ends a waiting sender and every later one with its error, the
// first given; the waiter's own reason to stop ends a wait too.
func TestCreditAbort(t *testing.T) {
	errFirst, errSecond := errors.New("first"), errors.New("second")
	c := flow.NewCredit(10, true)
	require.NoError(t, c.Acquire(10, now{}))
	w := newStopper(nil)
	done := make(chan error, 1)
	go func() { done <- c.Acquire(1, w) }()
	w.blocked(t)
	c.Abort(errFirst)
	require.Equal(t, errFirst, result(t, done))
	c.Abort(errSecond)
	c.Grant(10) // credit back changes nothing once aborted
	require.Equal(t, errFirst, c.Acquire(1, now{}))

	errStop := errors.New("context ended")
	c = flow.NewCredit(10, true)
	require.NoError(t, c.Acquire(10, now{}))
	w = newStopper(errStop)
	go func() { done <- c.Acquire(1, w) }()
	w.blocked(t)
	close(w.stop)
	require.Equal(t, errStop, result(t, done))
	require.Equal(t, errStop, c.Acquire(0, w), "a waiter that says stop is not given credit")
}

// Messages come out in order, then the end: io.EOF for an orderly one,
// the error otherwise, once what was put before has been taken.
func TestInboxOrder(t *testing.T) {
	errEnd := errors.New("peer failed")
	for _, end := range []error{nil, errEnd} {
		in := flow.NewInbox(100, nil)
		for _, m := range []string{"a", "", "ccc"} {
			require.NoError(t, in.Put([]byte(m)))
		}
		in.Finish(end)
		require.NoError(t, in.Put([]byte("late")), "a message after the end is dropped, not an error")
		var got []string
		for {
			it, err := in.Next(now{})
			if err != nil {
				if end == nil {
					require.Equal(t, io.EOF, err)
				} else {
					require.Equal(t, errEnd, err)
				}
				break
			}
			require.Nil(t, it.Ptr)
			got = append(got, string(it.Body))
		}
		require.Equal(t, []string{"a", "", "ccc"}, got)
	}
}

// The consumer waits for a message, and a Put wakes it.
func TestInboxWokenByPut(t *testing.T) {
	in := flow.NewInbox(100, nil)
	w := newStopper(nil)
	type got struct {
		it  flow.Item
		err error
	}
	done := make(chan got, 1)
	go func() { it, err := in.Next(w); done <- got{it, err} }()
	w.blocked(t)
	require.NoError(t, in.Put([]byte("hello")))
	select {
	case g := <-done:
		require.NoError(t, g.err)
		require.Equal(t, "hello", string(g.it.Body))
	case <-time.After(waitLong):
		t.Fatal("Next still waiting")
	}
}

// The consumer returns credit once it has taken half the window, all it
// has taken since the last grant; an empty message counts 1.
func TestInboxGrantAtHalfWindow(t *testing.T) {
	var grants []int
	in := flow.NewInbox(10, func(n int) { grants = append(grants, n) })
	var after [][]int
	for _, n := range []int{3, 1, 0, 4, 2, 2} {
		require.NoError(t, in.Put(make([]byte, n)))
		_, err := in.Next(now{})
		require.NoError(t, err)
		after = append(after, append([]int(nil), grants...))
	}
	// Taken: 3, 4, 5 → grant 5; 4, 6 → grant 6; 2.
	require.Equal(t, [][]int{nil, nil, {5}, {5}, {5, 6}, {5, 6}}, after)

	// A window of 1 grants every message.
	grants = nil
	in = flow.NewInbox(1, func(n int) { grants = append(grants, n) })
	for range 3 {
		require.NoError(t, in.Put([]byte("xy")))
		_, err := in.Next(now{})
		require.NoError(t, err)
	}
	require.Equal(t, []int{2, 2, 2}, grants)
}

// A peer that sends beyond the rule is a protocol error, ErrWindow: what
// the receiver holds is bounded by half its window plus one message.
func TestInboxBeyondWindow(t *testing.T) {
	in := flow.NewInbox(10, nil)
	require.NoError(t, in.Put(make([]byte, 6)))
	require.ErrorIs(t, in.Put(make([]byte, 5)), flow.ErrWindow)
	require.NoError(t, in.Put(make([]byte, 4))) // 10: fits exactly
	require.ErrorIs(t, in.Put(nil), flow.ErrWindow, "an empty message counts 1")
	require.Equal(t, "dispatch: a stream's peer sent beyond its window", flow.ErrWindow.Error())

	// Half the window held lets a message of any size in, and no more.
	in = flow.NewInbox(10, nil)
	require.NoError(t, in.Put(make([]byte, 5)))
	require.NoError(t, in.Put(make([]byte, 100)))
	require.ErrorIs(t, in.Put(make([]byte, 1)), flow.ErrWindow)

	// Taking half the window returns it: the peer may send it again.
	in = flow.NewInbox(10, func(int) {})
	require.NoError(t, in.Put(make([]byte, 6)))
	require.NoError(t, in.Put(make([]byte, 4)))
	_, err := in.Next(now{}) // 6 taken: granted
	require.NoError(t, err)
	require.NoError(t, in.Put(make([]byte, 6)))
	require.ErrorIs(t, in.Put(make([]byte, 1)), flow.ErrWindow)
}

// The two halves together, under the rule: a sender that keeps to its
// credit never goes beyond the receiver's window, and is never left
// waiting on an inbox with nothing to take (a deadlock), whatever the
// sizes, the window, and how many messages the consumer takes at a time.
func TestWindowNeverDeadlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		window := 1 + r.IntN(64)
		cr := flow.NewCredit(window, true)
		in := flow.NewInbox(window, cr.Grant)
		var sent, got []int
		for len(sent) < 100 {
			n := r.IntN(2 * window)
			err := cr.Acquire(n, now{})
			if err == nil {
				require.NoError(t, in.Put(make([]byte, n)), "round %d: window %d, sent %v", round, window, sent)
				sent = append(sent, n)
				continue
			}
			wouldWait(t, err)
			// The sender waits: the inbox must hold what will grant it.
			for take := 1 + r.IntN(3); take > 0; take-- {
				it, err := in.Next(now{})
				if err != nil && len(got) < len(sent) {
					t.Fatalf("round %d: window %d: the sender waits on an empty inbox (sent %v)", round, window, sent)
				}
				if err != nil {
					break
				}
				got = append(got, len(it.Body))
			}
			if len(got) == len(sent) {
				require.NoError(t, cr.Acquire(n, now{}), "round %d: window %d: the inbox is empty and the sender still waits", round, window)
				require.NoError(t, in.Put(make([]byte, n)))
				sent = append(sent, n)
			}
		}
		for len(got) < len(sent) {
			it, err := in.Next(now{})
			require.NoError(t, err)
			got = append(got, len(it.Body))
		}
		require.Equal(t, sent, got)
	}
}

// The inbox reuses the buffers of messages consumed, at most eight of
// them, none over 64 KiB, and none once the consumer has stopped.
func TestInboxFreeBuffers(t *testing.T) {
	in := flow.NewInbox(1<<20, nil)
	require.Nil(t, in.Buffer(), "nothing consumed yet")
	bodies := make([][]byte, 10)
	for i := range bodies {
		bodies[i] = make([]byte, 1, 100)
		require.NoError(t, in.Put(bodies[i]))
	}
	for range bodies {
		_, err := in.Next(now{})
		require.NoError(t, err)
	}
	in.Done()
	seen := map[*byte]bool{}
	for range 8 {
		b := in.Buffer()
		require.NotNil(t, b)
		require.Equal(t, 0, len(b))
		require.Equal(t, 100, cap(b))
		p := &b[:1][0]
		require.False(t, seen[p], "a buffer handed out twice")
		seen[p] = true
	}
	require.Nil(t, in.Buffer(), "more than eight kept")
	for _, b := range bodies[:8] {
		require.True(t, seen[&b[0]], "kept a buffer that is not a consumed body's, or the wrong ones")
	}

	big := flow.NewInbox(1<<20, nil)
	require.NoError(t, big.Put(make([]byte, 1, 64<<10)))
	require.NoError(t, big.Put(make([]byte, 1, 64<<10+1)))
	for range 2 {
		_, err := big.Next(now{})
		require.NoError(t, err)
	}
	big.Done()
	require.Equal(t, 64<<10, cap(big.Buffer()), "a buffer of 64 KiB is kept")
	require.Nil(t, big.Buffer(), "a buffer over 64 KiB is kept")

	closed := flow.NewInbox(100, nil)
	require.NoError(t, closed.Put(make([]byte, 1, 10)))
	_, err := closed.Next(now{})
	require.NoError(t, err)
	closed.Close()
	closed.Done()
	require.Nil(t, closed.Buffer(), "a buffer handed out once the consumer has stopped")
}

// Queued is told every change in the bytes waiting: put, taken, dropped
// by Close; a message put after Close is dropped untold.
func TestInboxQueued(t *testing.T) {
	var deltas []int
	in := flow.NewInbox(100, nil)
	in.Queued = func(d int) { deltas = append(deltas, d) }
	require.NoError(t, in.Put(make([]byte, 3)))
	_, err := in.Next(now{})
	require.NoError(t, err)
	require.NoError(t, in.Put(make([]byte, 2)))
	require.NoError(t, in.Put(make([]byte, 4)))
	in.Close()
	require.NoError(t, in.Put(make([]byte, 5)))
	require.Equal(t, []int{3, -3, 2, 4, -6}, deltas)
}

// In direct mode the sender lends its value and waits until the consumer
// is done with it: it asked for the next message.
func TestInboxLend(t *testing.T) {
	errDone := errors.New("stream done")
	in := flow.NewInbox(10, nil)
	v := new(int)
	lent := make(chan error, 1)
	go func() { lent <- in.Lend(v, newStopper(nil), errDone) }()
	it, err := in.Next(newStopper(nil))
	require.NoError(t, err)
	require.Same(t, v, it.Ptr)
	require.Nil(t, it.Body)
	require.Empty(t, lent, "Lend returned while the consumer holds the value")
	in.Done()
	require.NoError(t, result(t, lent))
	in.Done() // once given back, a second Done gives nothing back
	require.Empty(t, lent)
}

// A lend the consumer refuses or drops fails with the waiter's reason to
// stop, done only if it has none; one the sender's waiter stops before it
// is taken is withdrawn; one taken is waited for regardless.
func TestInboxLendStopped(t *testing.T) {
	errDone, errCtx := errors.New("stream done"), errors.New("context ended")

	t.Run("after Close", func(t *testing.T) {
		in := flow.NewInbox(10, nil)
		in.Close()
		require.Equal(t, errDone, in.Lend(new(int), now{}, errDone))
		w := newStopper(errCtx)
		close(w.stop)
		require.Equal(t, errCtx, in.Lend(new(int), w, errDone))
	})

	t.Run("after Finish", func(t *testing.T) {
		in := flow.NewInbox(10, nil)
		in.Finish(nil)
		require.Equal(t, errDone, in.Lend(new(int), now{}, errDone))
	})

	t.Run("dropped by Close", func(t *testing.T) {
		in := flow.NewInbox(10, nil)
		w := newStopper(nil)
		lent := make(chan error, 1)
		go func() { lent <- in.Lend(new(int), w, errDone) }()
		w.blocked(t)
		in.Close()
		require.Equal(t, errDone, result(t, lent))
	})

	t.Run("withdrawn", func(t *testing.T) {
		in := flow.NewInbox(10, nil)
		w := newStopper(errCtx)
		lent := make(chan error, 1)
		go func() { lent <- in.Lend(new(int), w, errDone) }()
		w.blocked(t)
		close(w.stop)
		require.Equal(t, errCtx, result(t, lent))
		_, err := in.Next(now{})
		wouldWait(t, err) // nothing left to take
	})

	t.Run("taken, then the sender stops", func(t *testing.T) {
		in := flow.NewInbox(10, nil)
		w := newStopper(errCtx)
		lent := make(chan error, 1)
		v := new(int)
		go func() { lent <- in.Lend(v, w, errDone) }()
		it, err := in.Next(newStopper(nil))
		require.NoError(t, err)
		require.Same(t, v, it.Ptr)
		close(w.stop)
		w.blocked(t)
		// Close from another goroutine does not give back a value the
		// consumer still reads.
		in.Close()
		select {
		case err := <-lent:
			t.Fatalf("Lend returned %v while the consumer holds the value", err)
		case <-time.After(20 * time.Millisecond):
		}
		in.Done()
		require.NoError(t, result(t, lent), "a value the consumer took and gave back was not dropped")
	})
}
