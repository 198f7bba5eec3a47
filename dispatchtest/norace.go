//go:build !race

package dispatchtest

// raceEnabled: the race detector is on, and a case makes fewer streams.
const raceEnabled = false
