package httpzerodial_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// Serving a dispatch.Server over HTTP, beside (or instead of) zerodial's
// wire, and calling a method with a plain POST of JSON — what
//
//	curl -H 'Content-Type: application/json' -d '{"A":2,"B":3}' http://127.0.0.1:8080/Calc/Add
//
// does.
func Example() {
	srv := dispatch.NewServer()
	type Args struct{ A, B int }
	if err := dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, args *Args, reply *int) error {
		*reply = args.A + args.B
		return nil
	}); err != nil {
		panic(err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	hs := &http.Server{Handler: httpzerodial.NewHandler(srv), Protocols: httpzerodial.Protocols()}
	go hs.Serve(l)
	defer func() {
		srv.Shutdown(context.Background()) // refuses new calls, waits for those in flight
		hs.Shutdown(context.Background())
	}()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	post := func(path, body string) {
		res, err := (&http.Client{Transport: tr}).Post("http://"+l.Addr().String()+path, "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		fmt.Println(res.Status, string(b))
	}
	post("/Calc/Add", `{"A":2,"B":3}`)
	post("/Calc/Sub", `{"A":2,"B":3}`)
	post("/Calc/Add", `{"A":"two"}`)
	// Output:
	// 200 OK 5
	// 404 Not Found {"code":"not_found","message":"rpc: can't find method Calc.Sub"}
	// 400 Bad Request {"code":"invalid_argument","message":"dispatch: decoding arguments of Calc.Add: json: cannot unmarshal string into Go struct field Args.A of type int"}
}
