package gobrpc_test

import (
	"fmt"
	"log"
	"net"
	"net/rpc"
	"strings"

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

// ServerCodecFunc and ClientCodecFunc give the codecs, with their options,
// the shape of jsonrpc's constructors, for APIs that take one. A limit set
// on the client's end refuses a reply over it.
func ExampleClientCodecFunc() {
	srv := rpc.NewServer()
	if err := srv.Register(Greeter{}); err != nil {
		log.Fatal(err)
	}
	newServerCodec := gobrpc.ServerCodecFunc()
	newClientCodec := gobrpc.ClientCodecFunc(gobrpc.WithMaxMessage(64))
	serverConn, clientConn := net.Pipe()
	go srv.ServeCodec(newServerCodec(serverConn))
	client := rpc.NewClientWithCodec(newClientCodec(clientConn))
	defer client.Close()

	var reply string
	err := client.Call("Greeter.Hello", "gob", &reply)
	fmt.Println(reply, err)
	err = client.Call("Greeter.Hello", strings.Repeat("x", 100), &reply)
	fmt.Println(err)
	// Output:
	// hello, gob <nil>
	// reading body gobrpc: message of 110 bytes, limit 64
}
