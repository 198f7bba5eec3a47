package transporttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zerodial/transport"
)

// ServeEcho accepts sockets from l and sends every message back on the
// socket it came from, until the test ends; then it closes l and every
// socket it accepted, and waits for its goroutines.
func ServeEcho(t testing.TB, l transport.Listener) { Serve(t, l, Echo) }

// Serve accepts sockets from l and runs handle on each in a goroutine of its
// own, until the test ends; then it closes l and every socket it accepted,
// and waits for the handlers to return.
func Serve(t testing.TB, l transport.Listener, handle func(transport.Socket)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var socks []transport.Socket
	wg.Go(func() {
		for {
			s, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			socks = append(socks, s)
			mu.Unlock()
			wg.Go(func() { handle(s) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, s := range socks {
			s.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// Echo sends every message s receives back on s, until s fails.
func Echo(s transport.Socket) {
	var m transport.Message
	for s.Recv(&m) == nil {
		if s.Send(&m) != nil {
			return
		}
	}
}

// Pair listens on addr with tr, dials the listener and returns both ends of
// the connection; the listener is closed at once, both sockets when the
// test ends.
func Pair(t testing.TB, tr transport.Transport, addr string) (client, server transport.Socket) {
	t.Helper()
	l, err := tr.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan transport.Socket, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- s
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err = tr.Dial(ctx, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		client.Close()
		t.Fatal("transporttest: Accept failed")
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}
