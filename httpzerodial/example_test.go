package httpzerodial_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"connectrpc.com/connect"

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

// jsonCodec is a connect-go codec for a method's Go types in JSON, as the
// Handler reads and writes them (connect-go's clients speak protobuf
// unless given another codec).
type jsonCodec struct{}

func (jsonCodec) Name() string                    { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (jsonCodec) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Calling a method of a dispatch.Server served over HTTP with connect-go's
// own generic client, in JSON: over the Connect protocol on HTTP/1.1, and
// over gRPC on HTTP/2 without TLS (h2c). A handler's error comes back with
// its code.
func Example_connectClient() {
	srv := dispatch.NewServer()
	type Args struct{ A, B int }
	if err := dispatch.Handle(srv, "Calc.Div", func(ctx context.Context, args *Args, reply *int) error {
		if args.B == 0 {
			return &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: "division by zero"}
		}
		*reply = args.A / args.B
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
		srv.Shutdown(context.Background())
		hs.Shutdown(context.Background())
	}()
	url := "http://" + l.Addr().String()

	h1 := &http.Transport{}
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	defer h1.CloseIdleConnections()
	defer h2c.CloseIdleConnections()

	div := connect.NewClient[Args, int](&http.Client{Transport: h1}, url+"/Calc/Div", connect.WithCodec(jsonCodec{}))
	res, err := div.CallUnary(context.Background(), connect.NewRequest(&Args{A: 7, B: 2}))
	if err != nil {
		panic(err)
	}
	fmt.Println("Connect:", *res.Msg)

	divGRPC := connect.NewClient[Args, int](&http.Client{Transport: h2c}, url+"/Calc/Div",
		connect.WithCodec(jsonCodec{}), connect.WithGRPC())
	res, err = divGRPC.CallUnary(context.Background(), connect.NewRequest(&Args{A: 9, B: 3}))
	if err != nil {
		panic(err)
	}
	fmt.Println("gRPC:", *res.Msg)

	_, err = div.CallUnary(context.Background(), connect.NewRequest(&Args{A: 1}))
	fmt.Println(connect.CodeOf(err), err)
	// Output:
	// Connect: 3
	// gRPC: 3
	// invalid_argument invalid_argument: division by zero
}

// Calling a service over HTTP from Go with the code that calls it over any
// other path: Dial returns a dispatch.Client whose calls go through
// connect-go's client (the Connect protocol, in msgpack), so the typed
// descriptor of the method — declared once, beside the service — is
// called as it is over zerodial's wire, its handler's error arriving with
// its code.
func ExampleDial() {
	type Item struct {
		SKU string
		N   int
	}
	Reserve := dispatch.NewMethod[Item, int]("Inventory.Reserve")

	srv := dispatch.NewServer()
	stock := map[string]int{"apple": 3}
	if err := Reserve.Handle(srv, func(ctx context.Context, it *Item, left *int) error {
		if stock[it.SKU] < it.N {
			return &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "not enough " + it.SKU}
		}
		stock[it.SKU] -= it.N
		*left = stock[it.SKU]
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
		srv.Shutdown(context.Background())
		hs.Shutdown(context.Background())
	}()

	ctx := context.Background()
	c, err := httpzerodial.Dial(ctx, "http://"+l.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	left, err := Reserve.Call(ctx, c, Item{SKU: "apple", N: 2})
	fmt.Println(left, err)
	_, err = Reserve.Call(ctx, c, Item{SKU: "apple", N: 2})
	var e *dispatch.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Message)
	}
	// Output:
	// 1 <nil>
	// failed_precondition not enough apple
}
