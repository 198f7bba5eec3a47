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

// A Server counted by Stats, and its page, here fetched as text: a call,
// and a stream of three messages.
func Example() {
	stats := rpcdebug.New()
	srv := dispatch.NewServer(stats.Option())
	defer srv.Close()
	err := dispatch.Handle(srv, "Calc.Double", func(ctx context.Context, n *int, r *int) error { *r = 2 * *n; return nil })
	if err != nil {
		log.Fatal(err)
	}
	err = dispatch.HandleStream(srv, "Calc.Count", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
		for n, err := range s.Recv() {
			if err != nil {
				return err
			}
			for i := range *n {
				if err := s.Send(&i); err != nil {
					return err
				}
			}
		}
		return nil
	})
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
	for _, err := range dispatch.CallStream[int, int](context.Background(), c, "Calc.Count", new(3)) {
		if err != nil {
			log.Fatal(err)
		}
	}

	http.Handle("/debug/rpc", stats.Handler(srv)) // the page, on http.DefaultServeMux
	for _, row := range stats.Snapshot(srv) {     // the same figures, for a program
		fmt.Println(row.Method, row.Calls, row.Errors, row.Streams, row.MsgsIn, row.MsgsOut, row.Paths)
	}
	// Output:
	// Calc.Count 0 0 1 1 3 map[memory:1]
	// Calc.Double 1 0 0 0 0 map[memory:1]
}
