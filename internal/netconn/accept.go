package netconn

import (
	"errors"
	"log/slog"
	"net"
	"time"
)

// The pauses between retries of a failed Accept: doubled after each
// failure in a row, from minPause to maxPause. Variables so that tests can
// make a pause long enough to see Close end it.
var (
	minPause = 5 * time.Millisecond
	maxPause = time.Second
)

// nextPause returns the pause after one that lasted d (zero: none yet).
func nextPause(d time.Duration) time.Duration { return min(max(2*d, minPause), maxPause) }

// Accept returns the next connection nl accepts, or nil once the listener
// is closed: once nl is, or done, which the listener's Close closes. A
// failure that is not the listener's closing (out of file descriptors, say)
// is logged as a warning on log, as name's ("tcp: accept failed"), and
// retried after a pause that doubles with each failure in a row, from 5ms
// to 1s, so that the loop neither spins nor gives up. The pause waits on
// done as well, so Close need not wait it out.
func Accept(nl net.Listener, done <-chan struct{}, log *slog.Logger, name string) net.Conn {
	var pause time.Duration
	for {
		c, err := nl.Accept()
		if err == nil {
			return c
		}
		if isClosed(done) || errors.Is(err, net.ErrClosed) {
			return nil
		}
		pause = nextPause(pause)
		log.Warn(name+": accept failed", "addr", nl.Addr().String(), "err", err, "retry_in", pause)
		timer := time.NewTimer(pause)
		select {
		case <-timer.C:
		case <-done:
			timer.Stop()
			return nil
		}
	}
}

func isClosed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
