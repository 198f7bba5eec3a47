package netconn

import (
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/preface"
)

// Caps returns the capabilities an end announces in its preface when it
// compresses bodies of at least threshold bytes: S2 (preface.CapS2), or
// nothing when threshold is 0 (compression off).
func Caps(threshold int) byte {
	if threshold > 0 {
		return preface.CapS2
	}
	return 0
}

// Compression returns what the frame Sockets of a connection do about
// compression (WIRE.md, "Compression"), once its prefaces are exchanged:
// with compression on at this end (threshold > 0), they read compressed
// frames, since this end announced so, and compress bodies of at least
// threshold bytes when the peer announced it accepts them. Off, they do
// neither.
func Compression(threshold int, peer preface.Preface) frame.Compression {
	if threshold <= 0 {
		return frame.Compression{}
	}
	c := frame.Compression{Accept: true}
	if peer.Caps&preface.CapS2 != 0 {
		c.Min = threshold
	}
	return c
}
