package memory

import "github.com/zerodial/transport/internal/frame"

// copyHeader makes dst hold exactly src's entries and returns their size as
// the frame limit counts it (frame.HeaderLen), in one pass over src.
//
// It clears dst only when dst holds a key src has not: dst is the header
// map of a message received before, and the messages of a connection mostly
// carry the same keys (a call's Service-Method and Seq), while clearing a
// map costs more than assigning its few entries again. After every key of
// src is assigned, dst holds them all; if it holds no more than that many,
// it holds nothing else. It serves BenchmarkUnary/zerodial-memory.
func copyHeader(dst, src map[string]string) int {
	n := 0
	for k, v := range src {
		dst[k] = v // strings are immutable: sharing them is a copy
		n += frame.EntryLen(k, v)
	}
	if len(dst) != len(src) {
		clear(dst)
		for k, v := range src {
			dst[k] = v
		}
	}
	return n
}
