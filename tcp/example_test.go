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

// A Transport for callers on the same host or a fast LAN, where
// compressing large bodies costs more than it saves: it neither compresses
// nor asks its peers to. Its peers need no change; they see that it does
// not announce compression and send it plain frames.
func ExampleWithoutCompression() {
	tr := tcp.New(tcp.WithoutCompression())
	l, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		s, err := l.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		var m transport.Message
		if s.Recv(&m) == nil {
			_ = s.Send(&m)
		}
	}()

	// A client with the default: compression on, from 1 KiB.
	s, err := tcp.New().Dial(context.Background(), l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(&transport.Message{Body: make([]byte, 64<<10)}); err != nil {
		log.Fatal(err)
	}
	var m transport.Message
	if err := s.Recv(&m); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(m.Body), "bytes back")
	// Output: 65536 bytes back
}
