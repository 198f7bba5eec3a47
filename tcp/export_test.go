package tcp

import (
	"testing"
	"time"
)

// SetHandshakeTimeout shortens HandshakeTimeout for the Transports New
// makes until the test ends, so tests of silent peers need not wait ten
// seconds. Tests using it must not run in parallel.
func SetHandshakeTimeout(t testing.TB, d time.Duration) {
	old := handshakeTimeout
	handshakeTimeout = d
	t.Cleanup(func() { handshakeTimeout = old })
}
