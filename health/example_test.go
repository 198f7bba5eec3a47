package health_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/memory"
)

// A Server with a health service, checked before and after Shutdown.
func Example() {
	h := health.NewServer()
	srv := dispatch.NewServer()
	defer srv.Close()
	if err := h.Register(srv); err != nil {
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

	s, _ := health.Check(context.Background(), c, "")
	fmt.Println(s)
	h.Shutdown() // before srv.Shutdown: balancers move away first
	s, _ = health.Check(context.Background(), c, "")
	fmt.Println(s)
	// Output:
	// SERVING
	// NOT_SERVING
}

// Watch yields the status at once and then every change: here a service
// going out of service.
func ExampleWatch() {
	h := health.NewServer()
	h.SetServingStatus("Store", health.Serving)
	srv := dispatch.NewServer()
	defer srv.Close()
	if err := h.Register(srv); err != nil {
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

	for s, err := range health.Watch(context.Background(), c, "Store") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(s)
		if s == health.NotServing {
			break // ends the watch
		}
		h.SetServingStatus("Store", health.NotServing)
	}
	// Output:
	// SERVING
	// NOT_SERVING
}
