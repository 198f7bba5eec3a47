package mux_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
)

// A server echoes one stream's messages; a client dials it and makes one
// round trip. More Dials to the same address would open more streams on
// the same connection.
func Example() {
	tr := mux.New(mux.WithKeepAlive(10 * time.Second))
	defer tr.Close() // closes the sessions this Transport dialled

	l, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		s, err := l.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		var m transport.Message
		for s.Recv(&m) == nil {
			m.Body = append([]byte("echo: "), m.Body...)
			if s.Send(&m) != nil {
				return
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := tr.Dial(ctx, l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(&transport.Message{
		Header: map[string]string{"Service-Method": "Echo.Say"},
		Body:   []byte("hello"),
	}); err != nil {
		log.Fatal(err)
	}
	var m transport.Message
	if err := s.Recv(&m); err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Header["Service-Method"], string(m.Body))
	// Output: Echo.Say echo: hello
}

// New does not fail: a Transport made with invalid options fails every
// Dial and Listen with one error that names each of them.
func ExampleNew_invalidOptions() {
	tr := mux.New(mux.WithKeepAlive(-5*time.Second), mux.WithMaxFrameSize(1<<20), mux.WithStreamWindow(1))
	defer tr.Close()
	_, err := tr.Listen("127.0.0.1:0")
	fmt.Println(err)
	// Output:
	// mux: WithKeepAlive(-5s): must not be negative
	// mux: WithStreamWindow(1): must be between 262144 (yamux's minimum) and 4294967295
}

// NewClientConn and NewServerConn run one session over a connection the
// caller already has — here the two ends of net.Pipe; a unix socket or a
// proxy's connection would do as well. Every Dial of the ClientConn is a
// stream the Listener of the other end accepts.
func ExampleNewClientConn() {
	a, b := net.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// The preface exchange needs both ends at once.
	listening := make(chan transport.Listener, 1)
	go func() {
		l, err := mux.NewServerConn(ctx, b)
		if err != nil {
			log.Fatal(err)
		}
		listening <- l
	}()
	cc, err := mux.NewClientConn(ctx, a)
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close() // closes the session and a
	l := <-listening
	defer l.Close()

	for _, body := range []string{"first", "second"} {
		s, err := cc.Dial(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := s.Send(&transport.Message{Body: []byte(body)}); err != nil {
			log.Fatal(err)
		}
		peer, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		var m transport.Message
		if err := peer.Recv(&m); err != nil {
			log.Fatal(err)
		}
		fmt.Println("accepted a stream carrying", string(m.Body))
		peer.Close()
		s.Close()
	}
	// Output:
	// accepted a stream carrying first
	// accepted a stream carrying second
}

// A server calls back the client that called it, over the connection the
// client made, as it must when the client sits behind NAT: the handler
// dials its caller's address, as CallInfo gives it, on Back's Transport,
// and the client serves the streams opened back on Incoming.
func ExampleBack() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// The server: its handler asks the caller for its name.
	srvTr := mux.New()
	defer srvTr.Close()
	l, err := srvTr.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	back, err := mux.Back(l)
	if err != nil {
		log.Fatal(err)
	}
	srv := dispatch.NewServer()
	defer srv.Close()
	err = dispatch.Handle(srv, "Hub.Hello", func(ctx context.Context, _ *struct{}, reply *string) error {
		info, _ := dispatch.CallInfoFrom(ctx)
		c, err := dispatch.Dial(ctx, back, info.RemoteAddr.String())
		if err != nil {
			return err
		}
		defer c.Close()
		var name string
		if err := c.Call(ctx, "Agent.Name", struct{}{}, &name); err != nil {
			return err
		}
		*reply = "hello, " + name
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}

	// The client: it serves Agent.Name on the streams opened back.
	tr := mux.New()
	defer tr.Close()
	agent := dispatch.NewServer()
	defer agent.Close()
	err = dispatch.Handle(agent, "Agent.Name", func(ctx context.Context, _ *struct{}, reply *string) error {
		*reply = "agent-7"
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := agent.Start(tr.Incoming()); err != nil {
		log.Fatal(err)
	}

	c, err := dispatch.Dial(ctx, tr, l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var reply string
	if err := c.Call(ctx, "Hub.Hello", struct{}{}, &reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply)
	// Output: hello, agent-7
}
