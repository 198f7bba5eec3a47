package transport_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
)

// serveEcho answers every message on every socket l accepts.
func serveEcho(l transport.Listener) {
	for {
		s, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer s.Close()
			var m transport.Message
			for s.Recv(&m) == nil {
				if s.Send(&m) != nil {
					return
				}
			}
		}()
	}
}

// The same code runs over any Transport; only the constructor and the
// listen address change.
func Example() {
	for _, tr := range []struct {
		transport.Transport
		addr string
	}{{memory.New(), ""}, {tcp.New(), "127.0.0.1:0"}} {
		l, err := tr.Listen(tr.addr)
		if err != nil {
			log.Fatal(err)
		}
		go serveEcho(l)

		c, err := tr.Dial(context.Background(), l.Addr().String())
		if err != nil {
			log.Fatal(err)
		}
		if err := c.Send(&transport.Message{Header: map[string]string{"greeting": "yes"}, Body: []byte("hello")}); err != nil {
			log.Fatal(err)
		}
		var reply transport.Message
		if err := c.Recv(&reply); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s %s\n", tr, reply.Body, reply.Header["greeting"])
		c.Close()
		l.Close()
	}
	// Output:
	// memory: hello yes
	// tcp: hello yes
}
