package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// fuzzServe starts srv on a memory listener and returns a raw socket to
// it; both end with the test.
func fuzzServe(t *testing.T, srv *dispatch.Server) transport.Socket {
	t.Cleanup(func() { srv.Close() })
	tr := memory.New()
	l, err := tr.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		t.Fatal(err)
	}
	sock, err := tr.Dial(context.Background(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() })
	return sock
}

// FuzzServerRequest sends a Server one request made of fuzzed headers and
// body, then a well-formed one: the Server must neither panic nor hang,
// answering each request it accepts with its own Seq, or closing the
// connection.
func FuzzServerRequest(f *testing.F) {
	args, _ := codec.Msgpack.Marshal(Args{6, 7})
	f.Add("Arith.Multiply", "1", "", "", false, args)
	f.Add("Gen.Add", "18446744073709551615", "1000000", "msgpack", false, args)
	f.Add("Arith.Sleep", "2", "0", "", false, args)
	f.Add("Arith.Multiply", "3", "", "", true, []byte{})
	f.Add("Nope.Nope", "-1", "x", "json", false, []byte{0xc1})
	f.Add("Arith.Fill", "4", "", "", false, []byte{0x81, 0xa1, 'X', 0x05})
	f.Fuzz(func(t *testing.T, method, seq, timeout, ctype string, cancel bool, body []byte) {
		srv := dispatch.NewServer()
		if err := srv.Register(newArith(), dispatch.Borrows()); err != nil {
			t.Fatal(err)
		}
		if err := dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, a *Args, r *int) error { *r = a.A + a.B; return nil }); err != nil {
			t.Fatal(err)
		}
		sock := fuzzServe(t, srv)

		h := map[string]string{"Service-Method": method, "Seq": seq}
		if timeout != "" {
			h["Timeout"] = timeout
		}
		if ctype != "" {
			h["Content-Type"] = ctype
		}
		if cancel {
			h["Cancel"] = ""
		}
		if err := sock.Send(&transport.Message{Header: h, Body: body}); err != nil {
			return // refused before it was sent (too large): nothing to check
		}
		good, _ := codec.Msgpack.Marshal(Args{2, 3})
		if err := sock.Send(&transport.Message{Header: map[string]string{"Service-Method": "Gen.Add", "Seq": "424242"}, Body: good}); err != nil {
			return // the server closed the connection: allowed
		}
		_ = sock.SetReadDeadline(time.Now().Add(5 * time.Second))
		var m transport.Message
		for {
			if err := sock.Recv(&m); err != nil {
				if errors.Is(err, transport.ErrTimeout) {
					t.Fatalf("the server neither answered nor closed the connection")
				}
				return // closed: allowed for a request it could not frame
			}
			if m.Header["Seq"] == "424242" {
				var r int
				if _, failed := m.Header["Error"]; failed || codec.Msgpack.Unmarshal(m.Body, &r) != nil || r != 5 {
					t.Fatalf("the well-formed call after the fuzzed one was answered %v %q", m.Header, m.Body)
				}
				return
			}
			if m.Header["Seq"] != seq {
				t.Fatalf("a reply with Seq %q to a request with Seq %q", m.Header["Seq"], seq)
			}
		}
	})
}

// FuzzClientReply has a hostile server answer a Client's call with fuzzed
// headers and body: the Client must neither panic nor hang past its
// context, and a failed call leaves the reply zero.
func FuzzClientReply(f *testing.F) {
	okBody, _ := codec.Msgpack.Marshal(42)
	f.Add("0", "", "", okBody, false)
	f.Add("0", "boom", "internal", []byte{}, false)
	f.Add("7", "", "", okBody, false)
	f.Add("x", "", "", okBody, true)
	f.Add("0", "", "", []byte{0xdb, 0xff, 0xff, 0xff, 0xff}, false)
	f.Fuzz(func(t *testing.T, seq, errText, errCode string, body []byte, cancel bool) {
		tr := memory.New()
		l, err := tr.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		served := make(chan struct{})
		go func() {
			defer close(served)
			s, err := l.Accept()
			if err != nil {
				return
			}
			defer s.Close()
			var req transport.Message
			if s.Recv(&req) != nil {
				return
			}
			h := map[string]string{"Service-Method": req.Header["Service-Method"], "Seq": seq}
			if errText != "" {
				h["Error"] = errText
			}
			if errCode != "" {
				h["Error-Code"] = errCode
			}
			if cancel {
				h["Cancel"] = ""
			}
			_ = s.Send(&transport.Message{Header: h, Body: body})
			_ = s.SetReadDeadline(time.Now().Add(time.Second))
			_ = s.Recv(&req) // until the client goes
		}()
		c, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancelCtx := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancelCtx()
		reply := 7
		err = c.Call(ctx, "Arith.Multiply", Args{6, 7}, &reply)
		if err != nil && reply != 0 {
			t.Fatalf("a failed call (%v) left the reply %d", err, reply)
		}
		c.Close()
		<-served
	})
}

// FuzzServerStream sends a Server a stream's frames with fuzzed kinds,
// windows and bodies — after an open frame, or without one — then a
// well-formed call: the Server must neither panic nor hang, answering the
// call or closing the connection, whatever the stream's frames were.
func FuzzServerStream(f *testing.F) {
	msg, _ := codec.Msgpack.Marshal(Args{1, 2})
	f.Add(true, "65536", "msg", "", msg, "end", "", []byte{})
	f.Add(true, "1", "msg", "", msg, "msg", "", msg)
	f.Add(true, "", "window", "1073741824", []byte{}, "window", "-1", []byte{})
	f.Add(false, "", "msg", "", msg, "end", "", []byte{})
	f.Add(true, "0", "open", "", []byte{0x01}, "nope", "x", []byte{0xc1})
	f.Fuzz(func(t *testing.T, open bool, openWindow, kind1, win1 string, body1 []byte, kind2, win2 string, body2 []byte) {
		srv := dispatch.NewServer()
		if err := dispatch.HandleStream(srv, "Echo.Stream", func(ctx context.Context, s *dispatch.ServerStream[Args, Args]) error {
			for m, err := range s.Recv() {
				if err != nil {
					return err
				}
				if err := s.Send(m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, a *Args, r *int) error { *r = a.A + a.B; return nil }); err != nil {
			t.Fatal(err)
		}
		sock := fuzzServe(t, srv)
		// The server may send on the stream while the test sends: read
		// everything on a goroutine, so that no window or send blocks it.
		answered := make(chan string, 1) // "" when the connection closed
		go func() {
			var m transport.Message
			for {
				if err := sock.Recv(&m); err != nil {
					answered <- ""
					return
				}
				if m.Header["Seq"] == "424242" {
					var r int
					if m.Header["Error"] == "" && codec.Msgpack.Unmarshal(m.Body, &r) == nil && r == 5 {
						answered <- "ok"
					} else {
						answered <- fmt.Sprintf("%v %q", m.Header, m.Body)
					}
					return
				}
			}
		}()
		send := func(h map[string]string, body []byte) bool {
			return sock.Send(&transport.Message{Header: h, Body: body}) == nil
		}
		if open {
			h := map[string]string{"Service-Method": "Echo.Stream", "Seq": "1", "Stream": "open"}
			if openWindow != "" {
				h["Window"] = openWindow
			}
			if !send(h, nil) {
				return
			}
		}
		for _, fr := range []struct {
			kind, win string
			body      []byte
		}{{kind1, win1, body1}, {kind2, win2, body2}} {
			h := map[string]string{"Seq": "1", "Stream": fr.kind}
			if fr.win != "" {
				h["Window"] = fr.win
			}
			if !send(h, fr.body) {
				return // the server closed the connection: allowed
			}
		}
		good, _ := codec.Msgpack.Marshal(Args{2, 3})
		if !send(map[string]string{"Service-Method": "Gen.Add", "Seq": "424242"}, good) {
			return
		}
		select {
		case a := <-answered: // answered well, or the connection closed: both allowed
			if a != "" && a != "ok" {
				t.Fatalf("the well-formed call after the stream's frames was answered %s", a)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the server neither answered the call after the stream's frames nor closed the connection")
		}
	})
}
