//go:build race

package shm_test

// Allocation counts mean nothing under the race detector.
const raceEnabled = true
