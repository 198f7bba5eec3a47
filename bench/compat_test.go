package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"net/rpc"
	"strings"
	"sync"
	"testing"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/zerodial/transport/dispatch"
)

// HashiCorp's msgpackrpc client, the one Consul and Nomad use, calling a
// dispatch.Server through Server.ServeCodec with msgpackrpc's own server
// codec: nothing of the client re-implemented.

// Tagged is a request whose fields go-msgpack names by their `codec` tags,
// as Consul's structs do, and which nests a slice and a map.
type Tagged struct {
	Name  string            `codec:"name"`
	Tags  []string          `codec:"tags"`
	Meta  map[string]string `codec:"meta"`
	Inner Args              `codec:"inner"`
}

// Compat is the service the compatibility tests call: Arith's Multiply
// beside the methods that fail, panic, hold or read tags.
type Compat struct {
	started chan struct{} // Hold has begun
	release chan struct{} // Hold may return
}

func newCompat() *Compat {
	return &Compat{started: make(chan struct{}, 1), release: make(chan struct{})}
}

// Multiply writes A*B, as Arith.Multiply.
func (*Compat) Multiply(args *Args, reply *Product) error {
	reply.P = args.A * args.B
	return nil
}

// Describe answers what it decoded from a tagged request, to show that
// every field arrived.
func (*Compat) Describe(args *Tagged, reply *Tagged) error {
	*reply = *args
	reply.Inner.A *= 2
	return nil
}

// Fail returns a *dispatch.Error, whose Message a net/rpc client reads.
func (*Compat) Fail(args *Args, reply *Product) error {
	return &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "compat: not today"}
}

// Panic panics; the Server's panic rule answers.
func (*Compat) Panic(args *Args, reply *Product) error { panic("kaboom") }

// Hold returns A once released.
func (c *Compat) Hold(args *Args, reply *Product) error {
	c.started <- struct{}{}
	<-c.release
	reply.P = args.A
	return nil
}

// serveCodecOn serves srv on l, one ServeCodec per accepted connection with
// the codec newCodec makes. The cleanup closes l and the Server and waits
// for every ServeCodec to return. It takes any listener, so that the same
// tests run where another listener hands the connections over.
func serveCodecOn(tb testing.TB, l net.Listener, srv *dispatch.Server, newCodec func(net.Conn) rpc.ServerCodec) {
	tb.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeCodec(newCodec(conn)) })
		}
	})
	tb.Cleanup(func() {
		l.Close()
		srv.Close()
		wg.Wait()
	})
}

func loopbackListener(tb testing.TB) net.Listener {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// msgpackServer serves a Compat service to msgpackrpc clients on a loopback
// listener and returns the Server, the service and the address. It serves
// each connection with ServeConn, as ServeCodec's doc has a msgpackrpc
// codec served: Shutdown and Close end a connection by closing it, where
// ServeCodec, which has only the codec, would call the codec's Close while
// it reads — and msgpackrpc's Close writes a field its read reads
// unguarded (v2.0.0), which the race detector reports.
func msgpackServer(t *testing.T, opts ...dispatch.ServerOption) (*dispatch.Server, *Compat, string) {
	t.Helper()
	srv := dispatch.NewServer(opts...)
	svc := newCompat()
	if err := srv.RegisterName("Compat", svc); err != nil {
		t.Fatal(err)
	}
	l := loopbackListener(t)
	serveConnOn(t, l, srv, msgpackrpc.NewServerCodec)
	return srv, svc, l.Addr().String()
}

// msgpackClient dials addr with msgpackrpc.NewClient. It is closed by
// closing its connection, not the client: MsgpackCodec.Close writes a flag
// its reader goroutine reads without synchronisation (v2.0.0).
func msgpackClient(t *testing.T, addr string) *rpc.Client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return msgpackrpc.NewClient(conn)
}

func serverError(t *testing.T, err error) string {
	t.Helper()
	var se rpc.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("got %v (%T), want an rpc.ServerError", err, err)
	}
	return string(se)
}

// TestMsgpackRPCServeConn: results of a struct request and reply (field
// names, codec tags, nested slices and maps), a handler's *dispatch.Error as
// its Message, net/rpc's words for unknown names, the panic rule, and the
// connection going on after each.
func TestMsgpackRPCServeConn(t *testing.T) {
	_, _, addr := msgpackServer(t)
	c := msgpackClient(t, addr)

	var p Product
	if err := c.Call("Compat.Multiply", &Args{A: 6, B: -7}, &p); err != nil {
		t.Fatal(err)
	}
	if p.P != -42 {
		t.Fatalf("Multiply(6, -7) = %d", p.P)
	}

	in := Tagged{Name: "web", Tags: []string{"a", "b"}, Meta: map[string]string{"dc": "eu"}, Inner: Args{A: 21, B: 1}}
	var out Tagged
	if err := c.Call("Compat.Describe", &in, &out); err != nil {
		t.Fatal(err)
	}
	if out.Name != "web" || len(out.Tags) != 2 || out.Tags[1] != "b" || out.Meta["dc"] != "eu" || out.Inner != (Args{A: 42, B: 1}) {
		t.Fatalf("Describe = %+v", out)
	}

	for method, want := range map[string]string{
		"Compat.Fail":  "compat: not today",
		"Compat.Panic": "dispatch: panic in Compat.Panic: kaboom",
		"Compat.Nope":  "rpc: can't find method Compat.Nope",
		"Nope.Nope":    "rpc: can't find service Nope.Nope",
		"Nope":         "rpc: service/method request ill-formed: Nope",
	} {
		p = Product{}
		if got := serverError(t, c.Call(method, &Args{A: 1, B: 2}, &p)); got != want {
			t.Errorf("%s: %q, want %q", method, got, want)
		}
		// The refused body was read past: the next call is read right.
		if err := c.Call("Compat.Multiply", &Args{A: 2, B: 3}, &p); err != nil || p.P != 6 {
			t.Fatalf("after %s: Multiply = %d, %v", method, p.P, err)
		}
	}

	// A request of the wrong shape is refused with the decoder's words.
	// go-msgpack stops inside the value it cannot decode, so what follows
	// on the connection cannot be read: the next header fails and the
	// connection closes, as net/rpc's own Server does with this codec. A
	// new connection is served.
	got := serverError(t, c.Call("Compat.Multiply", "six", &p))
	if want := "dispatch: decoding arguments of Compat.Multiply: msgpack decode error"; !strings.HasPrefix(got, want) {
		t.Errorf("wrong arguments: %q, want it to begin %q", got, want)
	}
	err := c.Call("Compat.Multiply", &Args{A: 4, B: 3}, &p)
	if err == nil || errors.As(err, new(rpc.ServerError)) {
		t.Fatalf("after wrong arguments: %v, want the connection closed", err)
	}
	if err := msgpackClient(t, addr).Call("Compat.Multiply", &Args{A: 4, B: 3}, &p); err != nil || p.P != 12 {
		t.Fatalf("a new connection: Multiply = %d, %v", p.P, err)
	}
}

// TestMsgpackRPCConcurrent: calls from many goroutines on one msgpackrpc
// client, and on several clients at once, each get their own answer.
func TestMsgpackRPCConcurrent(t *testing.T) {
	_, _, addr := msgpackServer(t)
	var wg sync.WaitGroup
	for range 3 {
		c := msgpackClient(t, addr)
		for g := range int64(16) {
			wg.Go(func() {
				for i := range int64(20) {
					var p Product
					if err := c.Call("Compat.Multiply", &Args{A: g, B: i}, &p); err != nil {
						t.Error(err)
						return
					}
					if p.P != g*i {
						t.Errorf("Multiply(%d, %d) = %d", g, i, p.P)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}

// TestMsgpackRPCShutdown: once Shutdown has begun a new call is refused
// with "dispatch: server is shutting down", the call in flight is answered,
// and then the connection closes.
func TestMsgpackRPCShutdown(t *testing.T) {
	srv, svc, addr := msgpackServer(t)
	c := msgpackClient(t, addr)

	var held Product
	call := c.Go("Compat.Hold", &Args{A: 5}, &held, nil)
	<-svc.started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()

	deadline := time.Now().Add(5 * time.Second)
	for {
		var p Product
		err := c.Call("Compat.Multiply", &Args{A: 2, B: 3}, &p)
		var se rpc.ServerError
		if errors.As(err, &se) && string(se) == "dispatch: server is shutting down" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refusal after Shutdown began: last %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned with a call in flight: %v", err)
	default:
	}
	svc.release <- struct{}{}
	<-call.Done
	if call.Error != nil || held.P != 5 {
		t.Fatalf("the call in flight: %d, %v", held.P, call.Error)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	// The connection is closed: net/rpc's client fails a call with
	// ErrShutdown once its reader has seen the end, and a call it sent just
	// before with io.ErrUnexpectedEOF.
	var p Product
	if err := c.Call("Compat.Multiply", &Args{A: 2, B: 3}, &p); !errors.Is(err, rpc.ErrShutdown) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after Shutdown: %v, want rpc.ErrShutdown or io.ErrUnexpectedEOF", err)
	}
}

// TestMsgpackRPCCallWithCodec calls through a bare client codec with
// msgpackrpc.CallWithCodec, one call at a time, as Consul's connection pool
// does: a result, then an error and its body read past, then a result.
func TestMsgpackRPCCallWithCodec(t *testing.T) {
	_, _, addr := msgpackServer(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cc := msgpackrpc.NewClientCodec(conn)
	var p Product
	if err := msgpackrpc.CallWithCodec(cc, "Compat.Multiply", &Args{A: 3, B: 5}, &p); err != nil || p.P != 15 {
		t.Fatalf("Multiply(3, 5) = %d, %v", p.P, err)
	}
	if got := serverError(t, msgpackrpc.CallWithCodec(cc, "Compat.Fail", &Args{}, &p)); got != "compat: not today" {
		t.Fatalf("Fail: %q", got)
	}
	if err := msgpackrpc.CallWithCodec(cc, "Compat.Multiply", &Args{A: 3, B: 6}, &p); err != nil || p.P != 18 {
		t.Fatalf("Multiply(3, 6) = %d, %v", p.P, err)
	}
}
