package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/gobrpc"
)

// Greeter is a service of a program not yet moved to zerodial, served by
// the standard library's rpc.Server.
type Greeter struct{}

// Hello greets name.
func (Greeter) Hello(name string, reply *string) error {
	*reply = "hello, " + name
	return nil
}

// DialCodec calls a server that has not moved to zerodial — here the
// standard library's rpc.Server, which speaks gob — with a dispatch Client
// and what it brings: interceptors (the Path of its calls is PathNetRPC),
// contexts, and errors with codes. jsonrpc.NewClientCodec would call a
// JSON-RPC server the same way.
func ExampleDialCodec() {
	legacy := rpc.NewServer()
	if err := legacy.Register(Greeter{}); err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go legacy.ServeConn(conn)
		}
	}()

	ctx := context.Background()
	gob := func(conn io.ReadWriteCloser) rpc.ClientCodec { return gobrpc.NewClientCodec(conn) }
	logCalls := func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		ci, _ := dispatch.CallInfoFrom(ctx)
		fmt.Println("calling", method, "over", ci.Path)
		return next(ctx, args, reply)
	}
	c, err := dispatch.DialCodec(ctx, nil, "tcp", l.Addr().String(), gob, dispatch.WithInterceptors(logCalls))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var greeting string
	err = c.Call(ctx, "Greeter.Hello", "gopher", &greeting)
	fmt.Println(greeting, err)

	err = c.Call(ctx, "Greeter.Bye", "gopher", &greeting)
	var de *dispatch.Error
	if errors.As(err, &de) {
		fmt.Println(de.Code, "-", de.Message)
	}
	// Output:
	// calling Greeter.Hello over netrpc
	// hello, gopher <nil>
	// calling Greeter.Bye over netrpc
	// not_found - rpc: can't find method Greeter.Bye
}

// NewCodecClient calls over a connection the program already has — here
// one end of a pipe whose other end a JSON-RPC server of the standard
// library serves. The Client owns the codec; Close closes it.
func ExampleNewCodecClient() {
	legacy := rpc.NewServer()
	if err := legacy.Register(Greeter{}); err != nil {
		log.Fatal(err)
	}
	mine, theirs := net.Pipe()
	served := make(chan struct{})
	go func() {
		legacy.ServeCodec(jsonrpc.NewServerCodec(theirs))
		close(served)
	}()

	c, err := dispatch.NewCodecClient(jsonrpc.NewClientCodec(mine))
	if err != nil {
		log.Fatal(err)
	}
	var greeting string
	err = c.Call(context.Background(), "Greeter.Hello", "JSON", &greeting)
	fmt.Println(greeting, err)
	c.Close()
	<-served // the server saw the connection close
	// Output: hello, JSON <nil>
}
