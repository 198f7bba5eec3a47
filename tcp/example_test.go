package tcp_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/tcp"
)

// Both ends of an in-memory pipe become Sockets; each sends one message and
// receives the other's. A unix socket, or a connection from a proxy, goes
// the same way, and either end may be a tcp Dial or Listener instead.
func ExampleNewSocket() {
	a, b := net.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Each end waits for the other's preface: set them up at once.
	type result struct {
		s   transport.Socket
		err error
	}
	server := make(chan result, 1)
	go func() {
		s, err := tcp.NewSocket(ctx, b)
		server <- result{s, err}
	}()
	client, err := tcp.NewSocket(ctx, a)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	r := <-server
	if r.err != nil {
		log.Fatal(r.err)
	}
	defer r.s.Close()

	// net.Pipe has no buffer: a Send waits for the peer's Recv.
	go func() {
		if err := r.s.Send(&transport.Message{Body: []byte("hello from b")}); err != nil {
			log.Print(err)
		}
	}()
	var m transport.Message
	if err := client.Recv(&m); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(m.Body))

	go func() {
		if err := client.Send(&transport.Message{Body: []byte("hello from a")}); err != nil {
			log.Print(err)
		}
	}()
	if err := r.s.Recv(&m); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(m.Body))
	// Output:
	// hello from b
	// hello from a
}
