package describe_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// A Server that describes itself, asked for its description by a Client.
func Example() {
	srv := dispatch.NewServer()
	defer srv.Close()
	type Args struct{ A, B int }
	if err := dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, a *Args, r *int) error {
		*r = a.A + a.B
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	if err := describe.Register(srv); err != nil {
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

	d, err := describe.Fetch(context.Background(), c)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range d.Methods {
		fmt.Println(m.Name, m.Args["$ref"], m.Reply["$ref"])
	}
	fmt.Println(d.Defs["describe_test.Args"]["properties"])
	// Output:
	// Calc.Add #/$defs/describe_test.Args <nil>
	// Describe.Methods #/$defs/describe.Request #/$defs/describe.Description
	// map[A:map[type:integer] B:map[type:integer]]
}
