package dispatch_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// Declared once, beside the types, where the server and its callers both
// see it: the name and the types of a method, checked by the compiler at
// both ends.
var exampleMultiply = dispatch.NewMethod[Args, int]("Shapes.Multiply")

// A descriptor registers its handler, and its callers call it with its
// types, on every path; a caller by name still reaches the same handler.
func ExampleNewMethod() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	err := exampleMultiply.Handle(srv, func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A * args.B
		return nil
	}, dispatch.Borrows())
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("shapes")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, "shapes", dispatch.WithShortcut(dispatch.ShortcutDirect))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	n, err := exampleMultiply.Call(ctx, c, Args{6, 7})
	fmt.Println(n, err)

	call := exampleMultiply.Go(ctx, c, Args{2, 3}, nil) // asynchronous
	<-call.Done
	fmt.Println(exampleMultiply.Result(call))
	// Output:
	// 42 <nil>
	// 6 <nil>
}

// A bad name is a mistake in the program: the constructors panic, as
// regexp.MustCompile does. A name built at run time is checked first.
func ExampleCheckMethodName() {
	fmt.Println(dispatch.CheckMethodName("Shapes.Multiply"))
	fmt.Println(dispatch.CheckMethodName("Multiply"))
	// Output:
	// <nil>
	// dispatch: method name "Multiply" is not of the form "Service.Method"
}

// Query and Event are the request and the messages of a watch.
type Query struct{ Topic string }
type Event struct {
	Topic string
	N     int
}

var exampleWatch = dispatch.NewServerStreamMethod[Query, Event]("Feed.Watch")

// A server-streaming handler receives its request as an argument and sends
// with a typed Sender. Its caller may range over the messages (Call), or
// open the stream and go on once the handler is ready (Open) — a watch that
// must be in place before what it watches changes: the handler subscribes,
// then says so with Ready.
func ExampleNewServerStreamMethod() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	var feed struct { // what the watch subscribes to
		sync.Mutex
		subscribers []chan int
	}
	publish := func(n int) {
		feed.Lock()
		defer feed.Unlock()
		for _, ch := range feed.subscribers {
			ch <- n
		}
	}
	err := exampleWatch.Handle(srv, func(ctx context.Context, q *Query, out dispatch.Sender[Event]) error {
		events := make(chan int, 2)
		feed.Lock()
		feed.subscribers = append(feed.subscribers, events)
		feed.Unlock()
		out.Ready() // subscribed: the caller's Open returns
		for n := range 2 {
			select {
			case n = <-events:
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := out.Send(&Event{Topic: q.Topic, N: n}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("feed")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, "feed")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	s, err := exampleWatch.Open(ctx, c, Query{Topic: "prices"})
	if err != nil {
		log.Fatal(err) // refused: no such method, shutting down, …
	}
	defer s.Close()
	publish(1) // the watch is in place: it sees both
	publish(2)
	for e, err := range s.Recv() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Topic, e.N)
	}
	// Output:
	// prices 1
	// prices 2
}

var exampleSum = dispatch.NewClientStreamMethod[int, int]("Stats.Sum")

// A client-streaming method: the caller sends any number of messages, the
// handler reads them with a typed Receiver and answers once.
func ExampleNewClientStreamMethod() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	err := exampleSum.Handle(srv, func(ctx context.Context, in dispatch.Receiver[int], sum *int) error {
		for n, err := range in.Recv() {
			if err != nil {
				return err
			}
			*sum += *n
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("stats")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, "stats")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	s, err := exampleSum.Open(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		if err := s.Send(&i); err != nil {
			break // the stream has ended: CloseAndRecv says why
		}
	}
	fmt.Println(s.CloseAndRecv())
	// Output: 10 <nil>
}

var exampleShout = dispatch.NewBidiStreamMethod[string, string]("Echo.Loud")

// A bidirectional stream whose two ends are typed by one declaration.
func ExampleNewBidiStreamMethod() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	err := exampleShout.Handle(srv, func(ctx context.Context, s *dispatch.ServerStream[string, string]) error {
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			loud := strings.ToUpper(*m) + "!"
			if err := s.Send(&loud); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("loud")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, "loud")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	s, err := exampleShout.Open(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	go func() {
		for _, w := range []string{"typed", "streams"} {
			_ = s.Send(&w)
		}
		_ = s.CloseSend()
	}()
	for m, err := range s.Recv() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*m)
	}
	// Output:
	// TYPED!
	// STREAMS!
}
