package memory

import (
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/rpcwire"
)

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
	if n, ok := copyCallHeader(dst, src); ok {
		return n
	}
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

// copyCallHeader is copyHeader for a src that holds a call's two headers,
// Service-Method and Seq, and nothing else, as every request and reply of
// dispatch without metadata, deadline or error does; it reports false,
// having changed nothing, for any other src. Two lookups cost half of a
// range over the map, which draws a random number to start from
// (BenchmarkUnary/zerodial-memory). TestCopyHeader covers both ways.
func copyCallHeader(dst, src map[string]string) (int, bool) {
	if len(src) != 2 {
		return 0, false
	}
	name, ok := src[rpcwire.ServiceMethod]
	if !ok {
		return 0, false
	}
	seq, ok := src[rpcwire.Seq]
	if !ok {
		return 0, false
	}
	if len(dst) > 2 {
		clear(dst)
	}
	dst[rpcwire.ServiceMethod] = name
	dst[rpcwire.Seq] = seq
	if len(dst) != 2 {
		clear(dst)
		dst[rpcwire.ServiceMethod] = name
		dst[rpcwire.Seq] = seq
	}
	return frame.EntryLen(rpcwire.ServiceMethod, name) + frame.EntryLen(rpcwire.Seq, seq), true
}
