package etcdzerodial_test

import (
	"context"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/etcdzerodial"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// Arith is a service in net/rpc's shape.
type Arith struct{}

// Args are Arith's arguments.
type Args struct{ A, B int }

// Multiply multiplies.
func (Arith) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

// A server registers itself after it starts serving, and is withdrawn as
// it shuts down; a client calls the servers registered, whichever they
// are. (It needs an etcd at 127.0.0.1:2379: it is compiled, not run.)
func Example() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	// The server.
	srv := dispatch.NewServer()
	if err := srv.Register(Arith{}); err != nil {
		log.Fatal(err)
	}
	l, err := tcp.New().Listen(":7000")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	// The address callers dial: this host's, as they reach it.
	if _, err := etcdzerodial.Register(ctx, cli, srv, "Arith", "10.0.0.7:7000"); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx) // withdraws the registration as it begins

	// A client, anywhere.
	c, err := dispatch.Dial(ctx, tcp.New(), "Arith", dispatch.WithResolver(etcdzerodial.NewResolver(cli)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var product int
	if err := c.Call(ctx, "Arith.Multiply", Args{6, 7}, &product); err != nil {
		log.Fatal(err)
	}
	fmt.Println(product)
}

// A registration with its own prefix and time to live, withdrawn by hand:
// here, for an address that no dispatch Server of this process serves.
func ExampleRegister() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	reg, err := etcdzerodial.Register(ctx, cli, nil, "Arith", "10.0.0.7:7000",
		etcdzerodial.WithPrefix("/prod/services"), etcdzerodial.WithTTL(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	fmt.Println(reg.Key()) // /prod/services/Arith/10.0.0.7:7000
}

// The Resolver beside DNS, each for its own scheme: "etcd:///Arith" is the
// service Arith in etcd, "dns:///arith.internal:7000" a DNS name.
func ExampleNewResolver() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	schemes := resolver.Schemes{
		"etcd": etcdzerodial.NewResolver(cli),
		"dns":  resolver.DNS{},
	}
	c, err := dispatch.Dial(ctx, tcp.New(), "etcd:///Arith", dispatch.WithResolver(schemes))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// Following a service by hand: report is called with the whole set each
// time it changes.
func ExampleResolver_Resolve() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	w, err := etcdzerodial.NewResolver(cli).Resolve("Arith", func(addrs []string, err error) {
		if err != nil {
			log.Println("Arith:", err)
			return
		}
		log.Println("Arith is served at", addrs)
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	time.Sleep(time.Minute)
}
