package dispatch_test

import (
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// A transport's options for a frame limit (0: the default), which the
// conformance suite's bindings (conformance_test.go) take from the limits
// a case asks for; the cases of limits on every path are the suite's
// (dispatchtest).

func tcpLimit(n int) []tcp.Option {
	if n == 0 {
		return nil
	}
	return []tcp.Option{tcp.WithMaxFrameSize(n)}
}

func muxLimit(n int) []mux.Option {
	if n == 0 {
		return nil
	}
	return []mux.Option{mux.WithMaxFrameSize(n)}
}

func memoryLimit(n int) []memory.Option {
	if n == 0 {
		return nil
	}
	return []memory.Option{memory.WithMaxFrameSize(n)}
}
