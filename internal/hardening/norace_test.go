//go:build !race

package hardening

const raceEnabled = false
