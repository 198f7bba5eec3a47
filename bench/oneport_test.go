package bench

import (
	"bytes"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"testing"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// One port: HashiCorp's msgpackrpc client calls the port of a zerodial
// listener with a fallback at the same time as zerodial clients. This file
// keeps its own service and helpers, so that it depends on no other file of
// the module.

// OnePortArgs are the arguments of OnePortArith.Multiply.
type OnePortArgs struct{ A, B int64 }

// OnePortProduct is its reply.
type OnePortProduct struct{ P int64 }

// OnePortArith is the service both kinds of client call.
type OnePortArith struct{}

// Multiply writes A*B.
func (OnePortArith) Multiply(args *OnePortArgs, reply *OnePortProduct) error {
	reply.P = args.A * args.B
	return nil
}

// msgpackFirstBytes returns what a real msgpackrpc client sends first on
// a new connection: the header of its first request.
func msgpackFirstBytes(t *testing.T) []byte {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		var b bytes.Buffer
		buf := make([]byte, 256)
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		for b.Len() < fallback.PrefixLen {
			n, err := c.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
	}()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := msgpackrpc.NewClient(conn)
	call := c.Go("OnePort.Multiply", &OnePortArgs{A: 2, B: 3}, new(OnePortProduct), make(chan *rpc.Call, 1))
	b := <-got
	conn.Close()
	<-call.Done // fails: the connection is gone
	if len(b) == 0 {
		t.Fatal("the msgpackrpc client sent nothing")
	}
	return b
}

// TestOnePortMsgpackFirstBytes: msgpackrpc's first byte is a msgpack map
// header, which fallback.Classify takes for Msgpack at once, and no prefix
// of what it sends is taken for anything else.
func TestOnePortMsgpackFirstBytes(t *testing.T) {
	b := msgpackFirstBytes(t)
	t.Logf("msgpackrpc sends %q", b[:min(len(b), fallback.PrefixLen)])
	if c := b[0]; !(c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf) {
		t.Fatalf("first byte %#x is not a msgpack map header", c)
	}
	for n := 1; n <= len(b); n++ {
		k, decided := fallback.Classify(b[:n])
		if !decided {
			continue
		}
		if k != fallback.Msgpack {
			t.Fatalf("%q classified %v", b[:n], k)
		}
		if n != 1 {
			t.Errorf("decided only after %d bytes", n)
		}
		break
	}
}

// TestOnePortMsgpack: over tcp and mux, msgpackrpc clients, served by
// ServeCodec with msgpackrpc's server codec on the fallback, and zerodial
// clients call one port at once, and each gets its own answers.
func TestOnePortMsgpack(t *testing.T) {
	for name, listen := range map[string]func(fb *fallback.Listener) (transport.Listener, transport.Transport, error){
		"tcp": func(fb *fallback.Listener) (transport.Listener, transport.Transport, error) {
			l, err := tcp.New(tcp.WithFallback(fb)).Listen("127.0.0.1:0")
			return l, tcp.New(), err
		},
		"mux": func(fb *fallback.Listener) (transport.Listener, transport.Transport, error) {
			l, err := mux.New(mux.WithFallback(fb)).Listen("127.0.0.1:0")
			return l, mux.New(), err
		},
	} {
		t.Run(name, func(t *testing.T) {
			fb, err := fallback.New()
			if err != nil {
				t.Fatal(err)
			}
			msgpackConns := fb.Split(fallback.Msgpack)
			srv := dispatch.NewServer()
			if err := srv.RegisterName("OnePort", OnePortArith{}); err != nil {
				t.Fatal(err)
			}
			l, dialTr, err := listen(fb)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(l); err != nil {
				t.Fatal(err)
			}
			var serving sync.WaitGroup
			serving.Go(func() {
				for {
					c, err := msgpackConns.Accept()
					if err != nil {
						return
					}
					serving.Go(func() { srv.ServeConn(c, msgpackrpc.NewServerCodec) })
				}
			})
			defer func() {
				srv.Close()
				l.Close()
				fb.Close()
				serving.Wait()
				dialTr.Close()
			}()
			addr := l.Addr().String()

			const clients, calls = 4, 10
			errs := make(chan error, 2*clients*calls)
			var wg sync.WaitGroup
			for i := range int64(clients) {
				wg.Go(func() {
					conn, err := net.Dial("tcp", addr)
					if err != nil {
						errs <- err
						return
					}
					// Closed by its connection: msgpackrpc's Close races
					// its own reader (v2.0.0).
					defer conn.Close()
					c := msgpackrpc.NewClient(conn)
					for j := range int64(calls) {
						var p OnePortProduct
						if err := c.Call("OnePort.Multiply", &OnePortArgs{A: i, B: j}, &p); err != nil {
							errs <- fmt.Errorf("msgpackrpc: %w", err)
						} else if p.P != i*j {
							errs <- fmt.Errorf("msgpackrpc: %d*%d = %d", i, j, p.P)
						}
					}
				})
				wg.Go(func() {
					c, err := dispatch.Dial(t.Context(), dialTr, addr)
					if err != nil {
						errs <- err
						return
					}
					defer c.Close()
					for j := range int64(calls) {
						var p OnePortProduct
						if err := c.Call(t.Context(), "OnePort.Multiply", &OnePortArgs{A: i, B: j}, &p); err != nil {
							errs <- fmt.Errorf("zerodial: %w", err)
						} else if p.P != i*j {
							errs <- fmt.Errorf("zerodial: %d*%d = %d", i, j, p.P)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
