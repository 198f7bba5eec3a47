package frame

import (
	"sync"
	"time"
)

// frameDeadline bounds how long the rest of a frame may take to arrive once
// its first byte has (the tcp and mux transports' WithFrameTimeout), on top
// of the read deadline the Socket's user sets. A peer that sends part of a
// frame and stops is then dropped, where otherwise it would hold the
// connection, its buffers and its reader for as long as the user's
// deadline allows — for ever, by default.
//
// The Socket moves the connection's read deadline only for a frame that is
// not already wholly in its read buffer, so a small message, which arrives
// in one read, costs no deadline change (tcp's BenchmarkRoundTrip is what
// that serves); a large one costs two.
type frameDeadline struct {
	timeout time.Duration
	set     func(time.Time) error // the connection's SetReadDeadline

	mu   sync.Mutex
	user time.Time // the user's read deadline; zero for none
	end  time.Time // the frame being read must be in by then; zero between frames
}

// setUser sets the user's read deadline, keeping the frame's bound while a
// frame is being read.
func (d *frameDeadline) setUser(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.user = t
	return d.set(earliest(t, d.end))
}

// begin starts the frame's bound: its first byte is here.
func (d *frameDeadline) begin() {
	d.mu.Lock()
	d.end = time.Now().Add(d.timeout)
	_ = d.set(earliest(d.user, d.end))
	d.mu.Unlock()
}

// finish ends the frame's bound, restoring the user's deadline. It reports
// whether the frame's bound, not the user's, had passed: what a timeout
// part way through the frame was due to.
func (d *frameDeadline) finish() (expired bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	expired = !time.Now().Before(d.end) && (d.user.IsZero() || d.end.Before(d.user))
	d.end = time.Time{}
	_ = d.set(d.user)
	return expired
}

// earliest returns the earlier of two deadlines, zero meaning none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
