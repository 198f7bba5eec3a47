package codec_test

import (
	"context"
	"fmt"
	"net/rpc"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/memory"
)

// Calc is an ordinary net/rpc service.
type Calc struct{}

// Add sets *sum to the sum of the operands.
func (Calc) Add(operands []int, sum *int) error {
	for _, n := range operands {
		*sum += n
	}
	return nil
}

// The adapters run the standard library's net/rpc over any transport.
func Example() {
	tr := memory.New()
	l, err := tr.Listen("")
	if err != nil {
		panic(err)
	}
	defer l.Close()

	srv := rpc.NewServer()
	if err := srv.Register(Calc{}); err != nil {
		panic(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		sock, err := l.Accept()
		if err != nil {
			return
		}
		srv.ServeCodec(codec.NewServerCodec(sock)) // returns when the client hangs up
	}()

	sock, err := tr.Dial(context.Background(), l.Addr().String())
	if err != nil {
		panic(err)
	}
	client := rpc.NewClientWithCodec(codec.NewClientCodec(sock))

	var sum int
	if err := client.Call("Calc.Add", []int{1, 2, 3}, &sum); err != nil {
		panic(err)
	}
	fmt.Println("sum:", sum)

	err = client.Call("Calc.Subtract", []int{3, 2}, &sum)
	fmt.Println("error:", err)

	client.Close()
	<-served
	// Output:
	// sum: 6
	// error: rpc: can't find method Calc.Subtract
}
