package tcp

import (
	"testing"
	"time"
)

// SetHandshakeTimeout shortens the handshake timeout for the Transports New
// makes, and for NewSocket, until the test ends, so tests of silent peers
// need not wait ten seconds. Tests using it must not run in parallel.
func SetHandshakeTimeout(t testing.TB, d time.Duration) {
	old := handshakeTimeout
	handshakeTimeout = d
	t.Cleanup(func() { handshakeTimeout = old })
}
