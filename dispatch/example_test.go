package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/rpc/jsonrpc"
	"strings"
	"time"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
)

// Calc is a service in net/rpc's shape.
type Calc struct{}

// Div divides, or fails with a coded error.
func (Calc) Div(args Args, reply *int) error {
	if args.B == 0 {
		return &dispatch.Error{Code: "division_by_zero", Message: "calc: divide by zero"}
	}
	*reply = args.A / args.B
	return nil
}

// A service is served once and called the same way over the transport and
// through the shortcut; only the client's options differ.
func Example() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	if err := srv.Register(Calc{}); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	tr := memory.New()
	l, err := tr.Listen("calc")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}

	for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy, dispatch.ShortcutDirect} {
		c, err := dispatch.Dial(ctx, tr, "calc", dispatch.WithShortcut(mode))
		if err != nil {
			log.Fatal(err)
		}
		var q int
		err = c.Call(ctx, "Calc.Div", Args{A: 42, B: 6}, &q)
		fmt.Println(mode, q, err)

		err = c.Call(ctx, "Calc.Div", Args{A: 1, B: 0}, &q)
		var de *dispatch.Error
		if errors.As(err, &de) {
			fmt.Println(mode, de.Code, de.Message)
		}
		c.Close()
	}
	// Output:
	// off 7 <nil>
	// off division_by_zero calc: divide by zero
	// copy 7 <nil>
	// copy division_by_zero calc: divide by zero
	// direct 7 <nil>
	// direct division_by_zero calc: divide by zero
}

// Handle registers a method with no reflection per call; metadata set by the
// caller is all the handler sees of the caller's context.
func ExampleHandle() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	err := dispatch.Handle(srv, "Greeter.Hello", func(ctx context.Context, name *string, reply *string) error {
		*reply = "hello, " + *name + " (from " + dispatch.MetadataFrom(ctx)["caller"] + ")"
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	tr := memory.New()
	l, _ := tr.Listen("")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}

	c, err := dispatch.Dial(ctx, tr, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutDirect))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var reply string
	ctx = dispatch.WithMetadata(ctx, dispatch.Metadata{"caller": "example"})
	if err := c.Call(ctx, "Greeter.Hello", "gopher", &reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply)
	// Output: hello, gopher (from example)
}

// Borrows marks methods that keep nothing they are given: a ShortcutDirect
// caller then lends them its own values, with no codec. A call whose
// context can end may return before its handler does, so it lends a deep
// copy instead.
func ExampleBorrows() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	var got *Args // what the handler received, for the example to show
	err := dispatch.Handle(srv, "Sum.Of", func(ctx context.Context, args *Args, reply *int) error {
		got = args
		*reply = args.A + args.B
		return nil
	}, dispatch.Borrows())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	tr := memory.New()
	l, _ := tr.Listen("")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutDirect))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	args := &Args{A: 2, B: 3}
	var sum int
	if err := c.Call(ctx, "Sum.Of", args, &sum); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum, "lent the caller's args:", got == args)

	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.Call(dctx, "Sum.Of", args, &sum); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum, "lent the caller's args:", got == args)
	// Output:
	// 5 lent the caller's args: true
	// 5 lent the caller's args: false
}

// NewClient calls over a Socket made some other way — here, one a listener
// accepted: the process that dialled serves on its end, and the process that
// accepted calls it back over the same connection.
func ExampleNewClient() {
	tr := memory.New()
	l, err := tr.Listen("")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	// The dialling side serves its own methods on the socket it dialled.
	caller := dispatch.NewServer()
	defer caller.Close()
	if err := dispatch.Handle(caller, "Caller.Name", func(ctx context.Context, _ *struct{}, reply *string) error {
		*reply = "the dialler"
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	sock, err := tr.Dial(context.Background(), l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	go caller.ServeSocket(sock)

	// The listening side calls back over the socket it accepted.
	accepted, err := l.Accept()
	if err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.NewClient(accepted)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var name string
	if err := c.Call(context.Background(), "Caller.Name", nil, &name); err != nil {
		log.Fatal(err)
	}
	fmt.Println(name)
	// Output: the dialler
}

// Clock is a service whose method takes a context first: it sees the
// caller's deadline and metadata, on every path.
type Clock struct{}

// Left reports whether the caller gave a deadline, and who called.
func (Clock) Left(ctx context.Context, _ struct{}, reply *string) error {
	_, ok := ctx.Deadline()
	*reply = fmt.Sprintf("deadline: %v, caller: %s", ok, dispatch.MetadataFrom(ctx)["caller"])
	return nil
}

// Register takes methods of net/rpc's shape, with or without a context
// first.
func ExampleServer_Register() {
	srv := dispatch.NewServer()
	defer srv.Close()
	if err := srv.Register(Clock{}); err != nil {
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

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = dispatch.WithMetadata(ctx, dispatch.Metadata{"caller": "example"})
	var s string
	if err := c.Call(ctx, "Clock.Left", struct{}{}, &s); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s)
	// Output: deadline: true, caller: example
}

// An interceptor wraps every call on every path: here, one that refuses
// callers without a token, with a code the caller can test for. It reads
// the one key with MetadataValue, which copies nothing.
func ExampleWithInterceptors() {
	errNoToken := &dispatch.Error{Code: dispatch.CodeUnauthenticated, Message: "no token"}
	auth := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		if token, _ := dispatch.MetadataValue(ctx, "token"); token == "" {
			return errNoToken
		}
		return next(ctx, args, reply)
	}
	srv := dispatch.NewServer(dispatch.WithInterceptors(auth))
	defer srv.Close()
	if err := srv.Register(Calc{}); err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy} {
		c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(mode))
		if err != nil {
			log.Fatal(err)
		}
		var q int
		err = c.Call(context.Background(), "Calc.Div", Args{A: 6, B: 3}, &q)
		fmt.Println(mode, errors.Is(err, errNoToken))
		ctx := dispatch.WithMetadata(context.Background(), dispatch.Metadata{"token": "t"})
		err = c.Call(ctx, "Calc.Div", Args{A: 6, B: 3}, &q)
		fmt.Println(mode, q, err)
		c.Close()
	}
	// Output:
	// off true
	// off 2 <nil>
	// copy true
	// copy 2 <nil>
}

// A Client's interceptors wrap every call it makes: here, one that adds a
// token to every call, which the Server's handler reads along with the path
// the call took.
func ExampleCallInfoFrom() {
	srv := dispatch.NewServer()
	defer srv.Close()
	err := dispatch.Handle(srv, "Who.Calls", func(ctx context.Context, _ *struct{}, reply *string) error {
		info, _ := dispatch.CallInfoFrom(ctx)
		*reply = fmt.Sprintf("%s via %s, token %q", info.Method, info.Path, dispatch.MetadataFrom(ctx)["token"])
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
	withToken := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		return next(dispatch.WithMetadata(ctx, dispatch.Metadata{"token": "t0k"}), args, reply)
	}
	for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy} {
		c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(),
			dispatch.WithShortcut(mode), dispatch.WithInterceptors(withToken))
		if err != nil {
			log.Fatal(err)
		}
		var s string
		if err := c.Call(context.Background(), "Who.Calls", struct{}{}, &s); err != nil {
			log.Fatal(err)
		}
		fmt.Println(s)
		c.Close()
	}
	// Output:
	// Who.Calls via memory, token "t0k"
	// Who.Calls via shortcut-copy, token "t0k"
}

// A handler attaches metadata to its reply, and a caller that captures it
// reads it, whichever path the call took.
func ExampleSetReplyMetadata() {
	srv := dispatch.NewServer()
	defer srv.Close()
	err := dispatch.Handle(srv, "Quota.Use", func(ctx context.Context, n *int, left *int) error {
		*left = 100 - *n
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"quota-reset": "3600s"})
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
	var md dispatch.Metadata
	var left int
	ctx := dispatch.CaptureReplyMetadata(context.Background(), &md)
	if err := c.Call(ctx, "Quota.Use", 7, &left); err != nil {
		log.Fatal(err)
	}
	fmt.Println(left, md["quota-reset"])
	// Output: 93 3600s
}

// Shutdown stops accepting calls at once and waits for those in flight.
func ExampleServer_Shutdown() {
	srv := dispatch.NewServer()
	started := make(chan struct{})
	if err := dispatch.Handle(srv, "Slow.Op", func(ctx context.Context, _ *struct{}, reply *string) error {
		close(started)
		time.Sleep(50 * time.Millisecond)
		*reply = "finished"
		return nil
	}); err != nil {
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
	var reply string
	call := c.Go(context.Background(), "Slow.Op", nil, &reply, nil)
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("shutdown:", srv.Shutdown(ctx))
	<-call.Done
	fmt.Println("the call in flight:", reply, call.Error)
	// Output:
	// shutdown: <nil>
	// the call in flight: finished <nil>
}

// A stream that runs until its caller leaves — a watch, a subscription —
// ends when its Server shuts down: its handler learns of it from
// ShuttingDown and returns, the caller's range ends without an error, and
// Shutdown does not wait for its deadline.
func ExampleShuttingDown() {
	srv := dispatch.NewServer()
	updates := make(chan string, 1)
	err := dispatch.HandleStream(srv, "Config.Watch", func(ctx context.Context, s *dispatch.ServerStream[struct{}, string]) error {
		for {
			select {
			case u := <-updates:
				if err := s.Send(&u); err != nil {
					return err
				}
			case <-dispatch.ShuttingDown(ctx):
				return nil // a clean end; the caller may watch another replica
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("config")
	_ = srv.Start(l)
	c, _ := dispatch.Dial(context.Background(), tr, "config")
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shutdown := make(chan error, 1)
	updates <- "v1"
	for u, err := range dispatch.CallStream[struct{}, string](ctx, c, "Config.Watch", nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("update:", *u)
		go func() { shutdown <- srv.Shutdown(ctx) }() // while the stream is open
	}
	fmt.Println("the stream ended; shutdown:", <-shutdown, "before its deadline:", ctx.Err() == nil)
	// Output:
	// update: v1
	// the stream ended; shutdown: <nil> before its deadline: true
}

// TLS is a transport option, the same for tcp and mux: the listener's
// transport takes the server configuration, the client's the client one.
// With mutual TLS the listener requires a client certificate; the shortcut
// connects a client only where the network would (it has a certificate to
// offer), and otherwise the client dials and meets the refusal.
func Example_tls() {
	for _, mutual := range []bool{false, true} {
		// Ordinary *tls.Config values; a test helper makes a certificate.
		serverTLS, clientTLS, err := testcert.Make(mutual)
		if err != nil {
			log.Fatal(err)
		}
		srv := dispatch.NewServer()
		if err := srv.Register(Calc{}); err != nil {
			log.Fatal(err)
		}
		serverTr := mux.New(mux.WithTLS(serverTLS))
		l, err := serverTr.Listen("127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		if err := srv.Start(l); err != nil {
			log.Fatal(err)
		}

		clientTr := mux.New(mux.WithTLS(clientTLS))
		for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy} {
			c, err := dispatch.Dial(context.Background(), clientTr, l.Addr().String(), dispatch.WithShortcut(mode))
			if err != nil {
				log.Fatal(err)
			}
			var q int
			err = c.Call(context.Background(), "Calc.Div", Args{A: 8, B: 2}, &q)
			fmt.Println("mutual:", mutual, mode, q, err)
			c.Close()
		}

		// A client with no certificate: refused where one is required.
		plainTLS := clientTLS.Clone()
		plainTLS.Certificates = nil
		noCert := mux.New(mux.WithTLS(plainTLS))
		c, err := dispatch.Dial(context.Background(), noCert, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutCopy))
		fmt.Println("mutual:", mutual, "no client certificate, refused:", err != nil)
		if err == nil {
			c.Close()
		}

		noCert.Close()
		clientTr.Close()
		srv.Close()
		serverTr.Close()
	}
	// Output:
	// mutual: false off 4 <nil>
	// mutual: false copy 4 <nil>
	// mutual: false no client certificate, refused: false
	// mutual: true off 4 <nil>
	// mutual: true copy 4 <nil>
	// mutual: true no client certificate, refused: true
}

// A server-streaming method sends any number of replies to one request;
// the caller ranges over them.
func ExampleCallStream() {
	srv := dispatch.NewServer()
	defer srv.Close()
	err := dispatch.HandleStream(srv, "Count.Up", func(ctx context.Context, s *dispatch.ServerStream[int, int]) error {
		for n, err := range s.Recv() { // the one request: how far to count
			if err != nil {
				return err
			}
			for i := 1; i <= *n; i++ {
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
	l, _ := tr.Listen("count")
	_ = srv.Start(l)
	c, _ := dispatch.Dial(context.Background(), tr, "count")
	defer c.Close()

	for n, err := range dispatch.CallStream[int, int](context.Background(), c, "Count.Up", new(3)) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*n)
	}
	// Output:
	// 1
	// 2
	// 3
}

// A bidirectional stream: the caller sends while it receives; the handler
// answers each message as it comes.
func ExampleOpenStream() {
	srv := dispatch.NewServer()
	defer srv.Close()
	err := dispatch.HandleStream(srv, "Echo.Shout", func(ctx context.Context, s *dispatch.ServerStream[string, string]) error {
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
	l, _ := tr.Listen("echo")
	_ = srv.Start(l)
	c, _ := dispatch.Dial(context.Background(), tr, "echo")
	defer c.Close()

	s, err := dispatch.OpenStream[string, string](context.Background(), c, "Echo.Shout")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	go func() {
		for _, w := range []string{"hello", "streams"} {
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
	// HELLO!
	// STREAMS!
}

// A client of the standard library's JSON-RPC calls a dispatch Server
// through ServeCodec: one connection here, from net.Pipe; a listener's
// connections each get their own ServeCodec.
func ExampleServer_ServeCodec() {
	srv := dispatch.NewServer()
	if err := srv.RegisterName("Calc", Calc{}); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	clientConn, serverConn := net.Pipe()
	go srv.ServeCodec(jsonrpc.NewServerCodec(serverConn))
	client := jsonrpc.NewClient(clientConn)
	defer client.Close()

	var q int
	if err := client.Call("Calc.Div", Args{A: 42, B: 6}, &q); err != nil {
		log.Fatal(err)
	}
	fmt.Println(q)
	// A handler's error reaches a net/rpc client as its Message.
	fmt.Println(client.Call("Calc.Div", Args{A: 1}, &q))
	// Output:
	// 7
	// calc: divide by zero
}
