package dispatchtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
	"github.com/zerodial/transport/memory"
)

// countingTransport is a Transport of one's own: the memory transport,
// its Dials counted. Embedding *memory.Transport keeps every optional
// interface it implements (the frame limit, the address space the
// shortcut finds its listeners in).
type countingTransport struct {
	*memory.Transport
	dials atomic.Int64
}

func (c *countingTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	c.dials.Add(1)
	return c.Transport.Dial(ctx, addr)
}

// countingBinding serves a case's Server on a countingTransport and calls
// it with a dispatch.Client. Like memory's, its two ends share one frame
// limit and it speaks one protocol, which its Profile declares; it has no
// real socket, so a synctest bubble can hold it.
func countingBinding() dispatchtest.Binding {
	return dispatchtest.Binding{
		Profile: dispatchtest.Profile{
			Name:        "counting-memory",
			Differences: []*dispatchtest.Difference{dispatchtest.OneProtocol, dispatchtest.OneFrameLimit},
		},
		Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
			limit := min(l.Server, l.Client)
			if limit == 0 {
				limit = max(l.Server, l.Client)
			}
			var opts []memory.Option
			if limit > 0 {
				opts = append(opts, memory.WithMaxFrameSize(limit))
			}
			tr := &countingTransport{Transport: memory.New(opts...)}
			ln, err := tr.Listen("")
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(ln); err != nil {
				t.Fatal(err)
			}
			c, err := dispatch.Dial(context.Background(), tr, ln.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutOff))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return dispatchtest.ClientCaller(c)
		},
		Bubble: true,
	}
}

// A Transport of one's own runs the suite through a Binding (its test:
// dispatchtest.Run(t, countingBinding())); what it declares is data.
func Example_binding() {
	b := countingBinding()
	var names []string
	for _, d := range b.Profile.Differences {
		names = append(names, d.Name)
	}
	fmt.Printf("%s declares: %s\n", b.Name(), strings.Join(names, ", "))
	// Output: counting-memory declares: one protocol, one frame limit
}
