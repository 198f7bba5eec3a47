//go:build race

package clone_test

const raceEnabled = true
