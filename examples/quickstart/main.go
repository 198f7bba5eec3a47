// Command quickstart serves an Arith service and calls it four ways — over
// mux (yamux on TCP), over the in-memory transport, and through the
// in-process shortcut in copy mode (the safe default) and direct mode (the
// opt-in for methods registered with dispatch.Borrows) — printing each
// result and the time one call takes. The method is a typed descriptor,
// declared once for the server and its callers; only the client's options
// change between the four ways.
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
type Args struct{ A, B int }

// Multiply is declared once, where the server and its callers both see it:
// its name and its types are checked by the compiler at both ends.
var Multiply = dispatch.NewMethod[Args, int]("Arith.Multiply")

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	// The handler keeps nothing it is given, so it may promise that it
	// borrows: a ShortcutDirect caller then lends it its own values
	// (without Borrows, ShortcutDirect runs it as ShortcutCopy).
	err := Multiply.Handle(srv, func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A * args.B
		return nil
	}, dispatch.Borrows())
	if err != nil {
		return err
	}

	tr := mux.New() // yamux on TCP; or tcp.New(), memory.New()
	defer tr.Close()
	l, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := srv.Start(l); err != nil { // serves in the background
		return err
	}
	memTr := memory.New()
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
		{"mux", tr, l.Addr().String(), nil},
		{"memory", memTr, memAddr, nil},
		{"shortcut copy", tr, l.Addr().String(), []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutCopy)}},
		{"shortcut direct", tr, l.Addr().String(), []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutDirect)}},
	}
	fmt.Fprintf(out, "%-16s %-8s %s\n", "path", "6 × 7", "per call")
	for _, w := range ways {
		product, perCall, err := callOver(ctx, w.tr, w.addr, w.opts...)
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
		fmt.Fprintf(out, "%-16s %-8d %v\n", w.name, product, perCall)
	}
	return nil
}

// callOver calls Multiply once through a Client of addr on tr, then times
// 2,000 more calls; the Client's options choose the path.
func callOver(ctx context.Context, tr transport.Transport, addr string, opts ...dispatch.ClientOption) (int, time.Duration, error) {
	c, err := dispatch.Dial(ctx, tr, addr, opts...) // the options choose the path
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	product, err := Multiply.Call(ctx, c, Args{6, 7}) // product is an int
	if err != nil {
		return 0, 0, err
	}
	perCall, err := timeCalls(ctx, c)
	return product, perCall, err
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
	start := time.Now()
	for range n {
		if _, err := Multiply.Call(ctx, c, Args{6, 7}); err != nil {
			return 0, err
		}
	}
	return (time.Since(start) / n).Round(10 * time.Nanosecond), nil
}
