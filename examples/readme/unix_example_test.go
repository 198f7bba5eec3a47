//go:build linux

package readme_test

import (
	"context"
	"fmt"
	"log"
	"net/rpc"
	"os"
	"path/filepath"
	"sync"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/gobrpc"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// The examples of docs/unix.md. Linux only: the credentials the handler
// checks are Linux's so far.

// A service on a unix socket: the address is "unix:" and the path, taken
// by Listen, Dial, and a resolver's list alike.
func Example_unix() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "zd") // a short path: a socket's has at most 107 bytes
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv := dispatch.NewServer()
	defer srv.Close()
	if err := srv.Register(Arith{}); err != nil {
		log.Fatal(err)
	}

	tr := tcp.New() // or mux.New()
	defer tr.Close()
	l, err := tr.Listen("unix:" + filepath.Join(dir, "rpc.sock"))
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, "unix:"+filepath.Join(dir, "rpc.sock"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var product int
	err = c.Call(ctx, "Arith.Multiply", Args{6, 7}, &product)
	fmt.Println(product, err)

	tcpL, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(tcpL); err != nil {
		log.Fatal(err)
	}
	// Replicas may mix unix and TCP addresses.
	target := "static:///unix:" + filepath.Join(dir, "rpc.sock") + "," + tcpL.Addr().String()
	replicas, err := dispatch.Dial(ctx, tr, target, dispatch.WithResolver(resolver.Default))
	if err != nil {
		log.Fatal(err)
	}
	defer replicas.Close()
	err = replicas.Call(ctx, "Arith.Multiply", Args{6, 7}, &product)
	fmt.Println(product, err, len(replicas.Replicas()))
	// Output:
	// 42 <nil>
	// 42 <nil> 2
}

// A handler that serves its own user alone, told by the credentials the
// kernel gives of a unix socket's peer.
func Example_unixPeerCred() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "zd")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv := dispatch.NewServer()
	defer srv.Close()
	err = dispatch.Handle(srv, "Admin.Ping", func(ctx context.Context, _ *struct{}, reply *string) error {
		info, _ := dispatch.CallInfoFrom(ctx)
		if info.PeerCred == nil || info.PeerCred.UID != os.Getuid() {
			return &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "only my own user may call"}
		}
		*reply = "pong"
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := tcp.New()
	defer tr.Close()
	l, err := tr.Listen("unix:" + filepath.Join(dir, "admin.sock"))
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	c, err := dispatch.Dial(ctx, tr, l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var reply string
	err = c.Call(ctx, "Admin.Ping", struct{}{}, &reply)
	fmt.Println(reply, err)
	// Output: pong <nil>
}

// One unix socket serves zerodial's clients and the standard library's
// net/rpc client, handed to a fallback listener.
func Example_unixOnePort() {
	dir, err := os.MkdirTemp("", "zd")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv := dispatch.NewServer()
	if err := srv.Register(Arith{}); err != nil {
		log.Fatal(err)
	}
	fb, err := fallback.New()
	if err != nil {
		log.Fatal(err)
	}
	tr := tcp.New(tcp.WithFallback(fb))
	defer tr.Close()
	l, err := tr.Listen("unix:" + filepath.Join(dir, "rpc.sock"))
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := fb.Accept() // what is not zerodial: here, gob
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeCodec(gobrpc.NewServerCodec(conn)) })
		}
	})

	client, err := rpc.Dial("unix", filepath.Join(dir, "rpc.sock"))
	if err != nil {
		log.Fatal(err)
	}
	var product int
	err = client.Call("Arith.Multiply", Args{6, 7}, &product)
	fmt.Println(product, err)
	client.Close()
	srv.Close()
	l.Close()
	fb.Close()
	wg.Wait()
	// Output: 42 <nil>
}
