package flow

// Announced waits until the receiver has announced its window (the first
// Grant of a Credit made with known false), which a receiver does when it
// has taken the stream: what lets a sender tell a stream established. It
// returns the error of Abort when the stream ended before any
// announcement (the receiver refused it), or when w says to stop. It takes
// no credit. Like Acquire, whose wake-ups it shares, it is the sender's: it
// must not run beside an Acquire.
func (c *Credit) Announced(w Waiter) error {
	for {
		c.mu.Lock()
		known, err := c.known, c.err
		c.mu.Unlock()
		switch {
		case known: // even if the stream has ended since: it was taken
			return nil
		case err != nil:
			return err
		}
		if err := w.Check(); err != nil {
			return err
		}
		if err := w.Wait(c.wake); err != nil {
			return err
		}
	}
}
