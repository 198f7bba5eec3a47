//go:build race

package hardening

// raceEnabled says the race detector is on: it makes the code it
// instruments several times slower, so time bounds get headroom (see
// bound).
const raceEnabled = true
