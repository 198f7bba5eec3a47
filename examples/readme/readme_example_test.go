package readme_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/gobrpc"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

type Args struct{ A, B int }

type Arith struct{}

// net/rpc's shape; a context-first shape is accepted too.
func (Arith) Multiply(args Args, reply *int) error { *reply = args.A * args.B; return nil }

// logging is an interceptor: it wraps every call, on every path.
func logging(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
	start := time.Now()
	err := next(ctx, args, reply)
	info, _ := dispatch.CallInfoFrom(ctx) // the path: memory, tcp, mux, shortcut-copy, shortcut-direct
	slog.Debug("call", "method", method, "path", info.Path, "peer", info.RemoteAddr, "took", time.Since(start), "err", err)
	return err
}

// A service is written once and served; a client calls it over the
// transport.
func Example_service() {
	ctx := context.Background()
	srv := dispatch.NewServer(dispatch.WithInterceptors(logging))
	if err := srv.Register(Arith{}); err != nil {
		log.Fatal(err)
	}
	// or, with no reflection per call:
	err := dispatch.Handle(srv, "Arith.Add", func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A + args.B
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	tr := mux.New() // or tcp.New(), memory.New()
	defer tr.Close()
	l, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil { // serves in the background; srv.Serve(l) blocks
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx) // graceful; srv.Close() is immediate
	addr := l.Addr().String()

	c, err := dispatch.Dial(ctx, tr, addr) // over the transport
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var product int
	err = c.Call(ctx, "Arith.Multiply", Args{6, 7}, &product)
	call := c.Go(ctx, "Arith.Add", Args{6, 7}, new(int), nil) // asynchronous
	<-call.Done
	fmt.Println(product, err, *call.Reply.(*int), call.Error)
	// Output: 42 <nil> 13 <nil>
}

// A stream that runs until its caller leaves ends when its Server's
// Shutdown begins, so that Shutdown need not wait for its deadline.
func Example_streamShutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv := dispatch.NewServer()
	updates := make(chan string, 1)
	err := dispatch.HandleStream(srv, "Config.Watch", func(ctx context.Context, s *dispatch.ServerStream[struct{}, string]) error {
		for {
			select {
			case u := <-updates:
				if err := s.Send(&u); err != nil {
					return err
				}
			case <-dispatch.ShuttingDown(ctx): // the Server's Shutdown has begun
				return nil // a clean end: the caller's range ends without an error
			case <-ctx.Done(): // the caller has gone
				return ctx.Err()
			}
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("config")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, "config")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	updates <- "v1"
	shutdown := make(chan error, 1)
	for u, err := range dispatch.CallStream[struct{}, string](ctx, c, "Config.Watch", nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*u)
		go func() { shutdown <- srv.Shutdown(ctx) }()
	}
	fmt.Println("ended;", "shutdown:", <-shutdown)
	// Output:
	// v1
	// ended; shutdown: <nil>
}

// The same client, with the shortcut: no socket when the address is served
// in this process.
func Example_shortcut() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	if err := srv.Register(Arith{}); err != nil {
		log.Fatal(err)
	}
	tr := mux.New()
	defer tr.Close()
	l, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	addr := l.Addr().String()

	c, err := dispatch.Dial(ctx, tr, addr,
		dispatch.WithShortcut(dispatch.ShortcutCopy)) // no socket if served in this process
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var product int
	err = c.Call(ctx, "Arith.Multiply", Args{6, 7}, &product)
	fmt.Println(product, err)
	// Output: 42 <nil>
}

// One Client over three replicas: calls are balanced between them, the
// one served in this process is called first with no socket, and a call
// that cannot have reached a replica (refused, shutting down) goes to
// another.
func Example_replicas() {
	ctx := context.Background()
	tr := mux.New()
	defer tr.Close()
	var addrs []string
	for range 3 {
		srv := dispatch.NewServer()
		defer srv.Close()
		if err := errors.Join(srv.Register(Arith{}), health.NewServer().Register(srv)); err != nil {
			log.Fatal(err)
		}
		l, err := tr.Listen("127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		if err := srv.Start(l); err != nil {
			log.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
	}
	target := "static:///" + strings.Join(addrs, ",") // or "dns:///svc.ns.svc.cluster.local:7000"

	c, err := dispatch.Dial(ctx, tr, target,
		dispatch.WithResolver(resolver.Default),                    // dns:/// and static:/// targets
		dispatch.WithBalancer(dispatch.LeastLoaded),                // or RoundRobin, the default
		dispatch.WithShortcut(dispatch.ShortcutCopy),               // local-first: a replica in this process
		dispatch.WithIdempotent("Arith.Multiply"),                  // may be retried after a failed connection
		dispatch.WithReplicaCheck(health.Checker(""), time.Second)) // skip replicas not serving
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var product int
	err = c.Call(ctx, "Arith.Multiply", Args{6, 7}, &product)
	fmt.Println(product, err)
	// Output: 42 <nil>
}

// KV and Cache are services whose methods keep nothing they are given.
type KV struct{}

func (KV) Get(key string, value *string) error { *value = "v:" + key; return nil }

type Cache struct{}

func (Cache) Get(key string, value *string) error { *value = "c:" + key; return nil }

func (Cache) Put(entry [2]string, ok *bool) error { *ok = true; return nil }

// Borrows marks the methods a ShortcutDirect client may lend its own values.
func Example_borrows() {
	srv := dispatch.NewServer()
	defer srv.Close()

	srv.Register(KV{}, dispatch.Borrows())         // every method of KV borrows
	srv.Register(Cache{}, dispatch.Borrows("Get")) // only Cache.Get does

	tr := memory.New()
	l, _ := tr.Listen("")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutDirect))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var v string
	err = c.Call(context.Background(), "Cache.Get", "k", &v)
	fmt.Println(v, err)
	// Output: c:k <nil>
}

// The standard library's net/rpc runs over any Socket through the codec
// adapters.
func Example_netRPC() {
	rpcServer := rpc.NewServer()
	if err := rpcServer.Register(Arith{}); err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("")
	defer l.Close()
	sock, err := tr.Dial(context.Background(), l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	serverSock, err := l.Accept()
	if err != nil {
		log.Fatal(err)
	}

	client := rpc.NewClientWithCodec(codec.NewClientCodec(sock)) // sock from tr.Dial
	go rpcServer.ServeCodec(codec.NewServerCodec(serverSock))

	var product int
	err = client.Call("Arith.Multiply", Args{6, 7}, &product)
	fmt.Println(product, err)
	client.Close()
	// Output: 42 <nil>
}

// A Server serves a connection of any net/rpc codec: here a JSON-RPC
// client of the standard library, through ServeConn, which applies the
// Server's limits on a connection to it.
func Example_serveCodec() {
	srv := dispatch.NewServer()
	if err := srv.RegisterName("Arith", Arith{}); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	clientConn, serverConn := net.Pipe()
	go srv.ServeConn(serverConn, jsonrpc.NewServerCodec)
	client := jsonrpc.NewClient(clientConn)
	defer client.Close()

	var product int
	err := client.Call("Arith.Multiply", Args{6, 7}, &product)
	fmt.Println(product, err)
	// Output: 42 <nil>
}

// A Transport dials and listens; a Socket sends and receives whole
// messages.
func Example_transport() {
	ctx := context.Background()
	tr := memory.New()

	l, _ := tr.Listen("") // memory: "" picks an address; tcp, mux: "127.0.0.1:0"
	c, _ := tr.Dial(ctx, l.Addr().String())
	c.Send(&transport.Message{Header: map[string]string{"k": "v"}, Body: []byte("hello")})

	s, _ := l.Accept()
	var m transport.Message
	s.Recv(&m)
	fmt.Println(m.Header["k"], string(m.Body))
	c.Close()
	s.Close()
	l.Close()
	// Output: v hello
}

// A rolling migration from net/rpc, with one port. The service moves first:
// its dispatch.Server keeps serving the clients not yet moved (net/rpc's
// gob, JSON-RPC) on the port its zerodial clients use. The clients then move
// one by one; a moved program calls the servers not yet moved through
// DialCodec, with its interceptors and deadlines.
func Example_migrate() {
	ctx := context.Background()

	// A server not yet moved: the standard library's rpc.Server.
	legacy := rpc.NewServer()
	if err := legacy.Register(Arith{}); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go legacy.Accept(ln)

	// The service moved: zerodial and net/rpc's clients on one port.
	fb, err := fallback.New()
	if err != nil {
		log.Fatal(err)
	}
	defer fb.Close()
	l, err := tcp.New(tcp.WithFallback(fb)).Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := dispatch.NewServer()
	if err := srv.RegisterName("Arith", Arith{}); err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := fb.Accept() // what does not speak zerodial, first bytes replayed
			if err != nil {
				return // fb closed
			}
			switch fallback.KindOf(c) {
			case fallback.Gob:
				go srv.ServeConn(c, gobrpc.ServerCodecFunc()) // the wire's limits on c
			case fallback.JSON:
				go srv.ServeConn(c, jsonrpc.NewServerCodec)
			default:
				c.Close()
			}
		}
	}()
	addr := l.Addr().String()

	var product int
	oldClient, err := rpc.Dial("tcp", addr) // a client not yet moved, unchanged
	if err != nil {
		log.Fatal(err)
	}
	err = oldClient.Call("Arith.Multiply", Args{2, 3}, &product)
	fmt.Println("net/rpc client:", product, err)
	oldClient.Close()

	newClient, err := dispatch.Dial(ctx, tcp.New(), addr) // a client moved
	if err != nil {
		log.Fatal(err)
	}
	err = newClient.Call(ctx, "Arith.Multiply", Args{6, 7}, &product)
	fmt.Println("zerodial client:", product, err)
	newClient.Close()

	toLegacy, err := dispatch.DialCodec(ctx, nil, "tcp", ln.Addr().String(), gobrpc.ClientCodecFunc()) // a moved client, a server not moved
	if err != nil {
		log.Fatal(err)
	}
	err = toLegacy.Call(ctx, "Arith.Multiply", Args{4, 5}, &product)
	fmt.Println("to rpc.Server:", product, err)
	toLegacy.Close()
	// Output:
	// net/rpc client: 6 <nil>
	// zerodial client: 42 <nil>
	// to rpc.Server: 20 <nil>
}

// Declared once, where the server and every caller see them: a method's
// name and types, checked by the compiler at both ends.
var (
	Multiply = dispatch.NewMethod[Args, int]("Arith.Multiply")
	Watch    = dispatch.NewServerStreamMethod[Quote, Tick]("Prices.Watch")
)

type Quote struct{ Symbol string }

type Tick struct {
	Symbol string
	Price  int
}

// Typed calls: the server registers a handler for a descriptor, the client
// calls it, with no method name to misspell and no reply type to get wrong.
func Example_typed() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	err := Multiply.Handle(srv, func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A * args.B
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	err = Watch.Handle(srv, func(ctx context.Context, q *Quote, out dispatch.Sender[Tick]) error {
		for price := 101; price <= 102; price++ { // the request is an argument; messages go out typed
			if err := out.Send(&Tick{Symbol: q.Symbol, Price: price}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, _ := tr.Listen("prices")
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, "prices")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	n, err := Multiply.Call(ctx, c, Args{6, 7}) // n is an int
	fmt.Println(n, err)

	s, err := Watch.Open(ctx, c, Quote{Symbol: "ZD"}) // returns once the handler is ready
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for t, err := range s.Recv() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.Symbol, t.Price)
	}
	// Output:
	// 42 <nil>
	// ZD 101
	// ZD 102
}

// TestDeadlineInABubble: a test of an hour-long handler and a 5 s deadline
// that runs in no time, in a testing/synctest bubble, over memory.
func TestDeadlineInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memory.New() // memory, or the shortcut (WithShortcut): no real socket
		srv := dispatch.NewServer()
		err := dispatch.Handle(srv, "Clock.Sleep", func(ctx context.Context, d *time.Duration, _ *struct{}) error {
			select {
			case <-time.After(*d): // the bubble's time
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		l, err := tr.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(l); err != nil {
			t.Fatal(err)
		}
		defer srv.Close() // everything the bubble started ends before it does
		c, err := dispatch.Dial(t.Context(), tr, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err = c.Call(ctx, "Clock.Sleep", time.Hour, new(struct{}))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("after %v: %v; want a deadline exceeded after exactly 5s", time.Since(start), err)
		}
	})
}
