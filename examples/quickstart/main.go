// Command quickstart serves an Arith service and calls it four ways — over
// mux (yamux on TCP), over the in-memory transport, and through the
// in-process shortcut in copy mode (the safe default) and direct mode (the
// opt-in for methods registered with dispatch.Borrows) — printing each
// result and the time one call takes. Only the client's options change
// between them.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
)

// Args are the operands of Arith.Multiply.
type Args struct {
	A, B int
}

// Arith is a service written once, in net/rpc's shape.
type Arith struct{}

// Multiply sets *reply to the product of the operands.
func (Arith) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()
	srv := dispatch.NewServer()
	// Multiply keeps nothing it is given, so its author may promise that it
	// borrows: a ShortcutDirect caller may then lend it its own values.
	// Without Borrows, ShortcutDirect runs it as ShortcutCopy.
	if err := srv.Register(Arith{}, dispatch.Borrows()); err != nil {
		return err
	}
	defer srv.Close()

	muxTr := mux.New()
	defer muxTr.Close()
	memTr := memory.New()

	muxAddr, err := start(srv, muxTr, "127.0.0.1:0")
	if err != nil {
		return err
	}
	memAddr, err := start(srv, memTr, "")
	if err != nil {
		return err
	}

	ways := []struct {
		name string
		tr   transport.Transport
		addr string
		opts []dispatch.ClientOption
	}{
		{"mux", muxTr, muxAddr, nil},
		{"memory", memTr, memAddr, nil},
		{"shortcut copy", muxTr, muxAddr, []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutCopy)}},
		{"shortcut direct", muxTr, muxAddr, []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutDirect)}},
	}
	fmt.Fprintf(out, "%-16s %-8s %s\n", "path", "6 × 7", "per call")
	for _, w := range ways {
		c, err := dispatch.Dial(ctx, w.tr, w.addr, w.opts...)
		if err != nil {
			return err
		}
		var product int
		if err := c.Call(ctx, "Arith.Multiply", Args{6, 7}, &product); err != nil {
			return err
		}
		perCall, err := timeCalls(ctx, c)
		c.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-16s %-8d %v\n", w.name, product, perCall)
	}
	return nil
}

// start serves srv on a new listener of tr and returns its address.
func start(srv *dispatch.Server, tr transport.Transport, addr string) (string, error) {
	l, err := tr.Listen(addr)
	if err != nil {
		return "", err
	}
	if err := srv.Start(l); err != nil {
		return "", err
	}
	return l.Addr().String(), nil
}

// timeCalls returns the mean time of one call over a short run.
func timeCalls(ctx context.Context, c *dispatch.Client) (time.Duration, error) {
	const n = 2000
	args := &Args{6, 7}
	var product int
	start := time.Now()
	for range n {
		if err := c.Call(ctx, "Arith.Multiply", args, &product); err != nil {
			return 0, err
		}
	}
	return (time.Since(start) / n).Round(10 * time.Nanosecond), nil
}
