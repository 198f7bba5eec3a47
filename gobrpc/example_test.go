package gobrpc_test

import (
	"fmt"
	"log"
	"net"
	"net/rpc"

	"github.com/zerodial/transport/gobrpc"
)

// Greeter is the example's service.
type Greeter struct{}

// Hello greets name.
func (Greeter) Hello(name string, reply *string) error {
	*reply = "hello, " + name
	return nil
}

// An rpc.Server serves each connection with gobrpc's codec (where a
// codec-taking API would), and a standard library client, rpc.Dial, calls it.
func Example() {
	srv := rpc.NewServer()
	if err := srv.Register(Greeter{}); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		srv.ServeCodec(gobrpc.NewServerCodec(conn, gobrpc.WithMaxMessage(1<<20)))
	}()

	client, err := rpc.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	var reply string
	if err := client.Call("Greeter.Hello", "gob", &reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply)

	client.Close()
	ln.Close()
	<-served
	// Output: hello, gob
}
