package rpcdebug_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/rpcdebug"
)

// A Server counted by Stats, and its page, here fetched as text.
func Example() {
	stats := rpcdebug.New()
	srv := dispatch.NewServer(dispatch.WithInterceptors(stats.Interceptor()))
	defer srv.Close()
	err := dispatch.Handle(srv, "Calc.Double", func(ctx context.Context, n *int, r *int) error { *r = 2 * *n; return nil })
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var r int
	_ = c.Call(context.Background(), "Calc.Double", 21, &r)

	http.Handle("/debug/rpc", stats.Handler(srv)) // the page, on http.DefaultServeMux
	for _, row := range stats.Snapshot(srv) {     // the same figures, for a program
		fmt.Println(row.Method, row.Calls, row.Errors, row.Paths)
	}
	// Output:
	// Calc.Double 1 0 map[memory:1]
}
