//go:build !race

package codec_test

// raceEnabled reports a race-detector build, in which sync.Pool drops items
// at random and allocation counts stop being exact.
const raceEnabled = false
