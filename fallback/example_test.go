package fallback_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/gobrpc"
	"github.com/zerodial/transport/tcp"
)

// Args are Arith.Multiply's arguments.
type Args struct{ A, B int }

// Arith is the service of the example.
type Arith struct{}

// Multiply writes A*B.
func (Arith) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

// One port for a dispatch Server's zerodial clients, its net/rpc clients
// (gob and JSON-RPC) and an HTTP server: the tcp listener hands what is not
// zerodial to the fallback, which routes HTTP to a listener of its own.
func Example() {
	fb, err := fallback.New()
	if err != nil {
		panic(err)
	}
	web := fb.Split(fallback.HTTP, fallback.HTTP2) // the rest stays with fb

	srv := dispatch.NewServer()
	if err := srv.RegisterName("Arith", Arith{}); err != nil {
		panic(err)
	}
	l, err := tcp.New(tcp.WithFallback(fb)).Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	if err := srv.Start(l); err != nil {
		panic(err)
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		http.Serve(web, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from %s", r.URL.Path)
		}))
	})
	wg.Go(func() {
		for {
			c, err := fb.Accept()
			if err != nil {
				return // fb closed
			}
			switch fallback.KindOf(c) {
			case fallback.Gob:
				wg.Go(func() { srv.ServeConn(c, gobrpc.ServerCodecFunc()) })
			case fallback.JSON:
				wg.Go(func() { srv.ServeConn(c, jsonrpc.NewServerCodec) })
			default:
				c.Close()
			}
		}
	})
	addr := l.Addr().String()

	var n int
	tr := tcp.New()
	zc, err := dispatch.Dial(context.Background(), tr, addr)
	if err != nil {
		panic(err)
	}
	err = zc.Call(context.Background(), "Arith.Multiply", Args{6, 7}, &n)
	fmt.Println("zerodial:", n, err)
	zc.Close()

	gc, err := rpc.Dial("tcp", addr) // net/rpc's gob client
	if err != nil {
		panic(err)
	}
	err = gc.Call("Arith.Multiply", Args{2, 3}, &n)
	fmt.Println("gob:", n, err)
	gc.Close()

	jc, err := jsonrpc.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	err = jc.Call("Arith.Multiply", Args{4, 5}, &n)
	fmt.Println("json:", n, err)
	jc.Close()

	hc := &http.Client{Transport: &http.Transport{}}
	resp, err := hc.Get("http://" + addr + "/one-port")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	hc.CloseIdleConnections()
	fmt.Println("http:", string(body))

	srv.Close()
	l.Close()  // does not close fb
	fb.Close() // ends fb.Accept and http.Serve
	wg.Wait()
	// Output:
	// zerodial: 42 <nil>
	// gob: 6 <nil>
	// json: 20 <nil>
	// http: hello from /one-port
}
