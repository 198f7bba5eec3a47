package dispatch

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport/internal/signal"
)

// gate counts the calls inside a Server and closes to new ones at shutdown,
// so that Shutdown can wait for exactly the calls already admitted. It is one
// atomic word, because the shortcut passes through it on every call.
type gate struct {
	n         atomic.Int64  // calls inside, plus closingBit once closed
	idle      signal.Signal // set when the gate is closed and the last call has left
	closeOnce sync.Once
}

const closingBit = 1 << 62

func newGate() *gate { return &gate{} }

// enter admits a call, or reports false once the gate is closed.
func (g *gate) enter() bool {
	for {
		v := g.n.Load()
		if v&closingBit != 0 {
			return false
		}
		if g.n.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// closed reports whether the gate turns new calls away.
func (g *gate) closed() bool { return g.n.Load()&closingBit != 0 }

// join admits one more call on behalf of a call already inside, even once
// the gate is closing: the count cannot have reached idle while that call
// holds it. A shortcut call whose handler may outlive its caller takes one
// for the handler, which leaves when the handler returns.
func (g *gate) join() { g.n.Add(1) }

// leave ends a call admitted by enter or join.
func (g *gate) leave() {
	if g.n.Add(-1) == closingBit {
		g.idle.Set(nil)
	}
}

// close turns new calls away.
func (g *gate) close() {
	g.closeOnce.Do(func() {
		if g.n.Add(closingBit) == closingBit {
			g.idle.Set(nil)
		}
	})
}

// wait returns when every admitted call has left, or ctx ends first.
func (g *gate) wait(ctx context.Context) error {
	select {
	case <-g.idle.Signal():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
