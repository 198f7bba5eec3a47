// Package connwatch watches a network connection for the two ways it can
// stop doing its work: Idle drops one that has been idle — no message
// received, no reply written, no call in flight — for the idle timeout
// (dispatch's WithIdleTimeout), and Watchdog closes one whose replies stop
// going out, its peer not reading, for the reply timeout (WithReplyTimeout).
//
// Both are one timer per connection, ticking at a fraction of the timeout,
// rather than a deadline moved or a timer set for every message: what
// happens on a connection costs an atomic operation or three on the hot
// path, and the ticks count how long nothing has moved. The price is
// precision, which each type states.
package connwatch
