package gobrpc_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"strings"
	"sync"
	"testing"

	"github.com/zerodial/transport/gobrpc"
)

// TestParity runs one table of calls with every pairing of client codec
// (net/rpc's, gobrpc's) and server codec, each case on a connection of its
// own, and demands of each pairing what net/rpc with net/rpc gives.
func TestParity(t *testing.T) {
	cases := []struct {
		name, method string
		args         any
		reply        func() any
		want         string // the outcome of net/rpc with net/rpc, where it is worth spelling
	}{
		{"result", "Arith.Add", Args{2, 3}, func() any { return new(int) }, "5 <nil>"},
		{"handler error", "Arith.Fail", Args{7, 0}, func() any { return new(int) }, "0 arith: refused 7"},
		{"unknown method", "Arith.Nope", Args{}, func() any { return new(int) }, "0 rpc: can't find method Arith.Nope"},
		{"unknown service", "Nope.Add", Args{}, func() any { return new(int) }, "0 rpc: can't find service Nope.Add"},
		{"malformed method", "Add", Args{}, func() any { return new(int) }, "0 rpc: service/method request ill-formed: Add"},
		{"args of another type", "Arith.Add", "two", func() any { return new(int) }, ""},
		{"reply of another type", "Arith.Add", Args{1, 1}, func() any { return new(string) }, ""},
		{"reply fails to encode", "Secret.Get", 1, func() any { return new(Opaque) }, ""},
		{"empty body", "Blob.Len", []byte{}, func() any { return new(int) }, "0 <nil>"},
	}
	servers := map[bool]*testServer{false: startServer(t, false), true: startServer(t, true)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outcome := func(clientOurs, serverOurs bool) string {
				c := dial(t, servers[serverOurs].addr, clientOurs)
				reply := tc.reply()
				err := c.Call(tc.method, tc.args, reply)
				return fmt.Sprintf("%v %v", deref(reply), err)
			}
			ref := outcome(false, false)
			if tc.want != "" && ref != tc.want {
				t.Fatalf("net/rpc with net/rpc: %q, the table says %q", ref, tc.want)
			}
			for _, p := range [][2]bool{{false, true}, {true, false}, {true, true}} {
				if got := outcome(p[0], p[1]); got != ref {
					t.Errorf("%s client, %s server: %q, net/rpc with net/rpc: %q", kind(p[0]), kind(p[1]), got, ref)
				}
			}
		})
	}
}

func deref(v any) any {
	switch v := v.(type) {
	case *int:
		return *v
	case *string:
		return fmt.Sprintf("%q", *v)
	case *Opaque:
		return v.n
	}
	return v
}

// TestConcurrentCalls runs many calls at once on one connection, with each
// of gobrpc's codecs against net/rpc's.
func TestConcurrentCalls(t *testing.T) {
	for _, p := range [][2]bool{{false, true}, {true, false}} {
		t.Run(kind(p[0])+" client, "+kind(p[1])+" server", func(t *testing.T) {
			c := dial(t, startServer(t, p[1]).addr, p[0])
			var wg sync.WaitGroup
			errs := make(chan error, 16*50)
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 50 {
						var sum int
						if i%10 == 9 {
							err := c.Call("Arith.Fail", Args{g, i}, &sum)
							if want := fmt.Sprintf("arith: refused %d", g); err == nil || err.Error() != want {
								errs <- fmt.Errorf("Fail(%d): %v, want %q", g, err, want)
							}
							continue
						}
						if err := c.Call("Arith.Add", Args{g, i}, &sum); err != nil || sum != g+i {
							errs <- fmt.Errorf("Add(%d, %d) = %d, %v", g, i, sum, err)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// calls is the sequence TestSameBytes sends, one call at a time so that the
// bytes on the wire do not depend on scheduling.
func calls(t *testing.T, c *rpc.Client) {
	t.Helper()
	var n int
	var b []byte
	for _, call := range []struct {
		method string
		args   any
		reply  any
	}{
		{"Arith.Add", Args{1, 2}, &n},
		{"Arith.Fail", Args{3, 4}, &n},
		{"Arith.Nope", Args{}, &n},
		{"Blob.Make", 300, &b},
		{"Blob.Len", bytes.Repeat([]byte{7}, 5000), &n},
		{"Arith.Add", Args{5, 6}, &n},
	} {
		c.Call(call.method, call.args, call.reply)
	}
}

// TestSameBytes: gobrpc's client writes, and its server answers, the very
// bytes net/rpc's do, for calls with results, errors, unknown methods and
// bodies larger than the write buffer.
func TestSameBytes(t *testing.T) {
	t.Run("client", func(t *testing.T) {
		written := func(ours bool) []byte {
			cc, sc := net.Pipe()
			rec := &pipeConn{Conn: cc}
			srv := newRPCServer(t)
			done := make(chan struct{})
			go func() { srv.ServeConn(sc); close(done) }()
			var c *rpc.Client
			if ours {
				c = rpc.NewClientWithCodec(gobrpc.NewClientCodec(rec))
			} else {
				c = rpc.NewClient(rec)
			}
			calls(t, c)
			c.Close()
			<-done
			return rec.bytes()
		}
		want, got := written(false), written(true)
		if len(want) < 5000 || !bytes.Equal(got, want) {
			t.Fatalf("gobrpc's client wrote %d bytes, net/rpc's %d, not the same", len(got), len(want))
		}
	})
	t.Run("server", func(t *testing.T) {
		written := func(ours bool) []byte {
			cc, sc := net.Pipe()
			rec := &pipeConn{Conn: sc}
			srv := newRPCServer(t)
			done := make(chan struct{})
			go func() {
				if ours {
					srv.ServeCodec(gobrpc.NewServerCodec(rec))
				} else {
					srv.ServeConn(rec)
				}
				close(done)
			}()
			c := rpc.NewClient(cc)
			calls(t, c)
			c.Close()
			<-done
			return rec.bytes()
		}
		want, got := written(false), written(true)
		if len(want) < 300 || !bytes.Equal(got, want) {
			t.Fatalf("gobrpc's server wrote %d bytes, net/rpc's %d, not the same", len(got), len(want))
		}
	})
}

// TestClientBodyFailsToEncode: a request whose body gob cannot encode fails
// with gob's error and closes the connection, so its header, already
// buffered, never reaches the server ahead of another request's.
func TestClientBodyFailsToEncode(t *testing.T) {
	ts := startServer(t, true)
	c := dial(t, ts.addr, true)
	var n int
	err := c.Call("Arith.Add", Opaque{}, &n)
	if err == nil || !strings.Contains(err.Error(), "gob: type gobrpc_test.Opaque has no exported fields") {
		t.Fatalf("a body gob cannot encode: %v", err)
	}
	// rpc.ErrShutdown once the Client's reader has seen the end, the
	// codec's own error before.
	if err := c.Call("Arith.Add", Args{1, 2}, &n); err != rpc.ErrShutdown && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a call after it: %v, want rpc.ErrShutdown or net.ErrClosed", err)
	}
	for _, err := range ts.errs() {
		if !strings.Contains(err.Error(), "EOF") {
			t.Errorf("the server read %v, want only the end of the connection", err)
		}
	}
	if err := dial(t, ts.addr, true).Call("Arith.Add", Args{1, 2}, &n); err != nil || n != 3 {
		t.Fatalf("a new connection: %d, %v", n, err)
	}
}

// TestNilPointerBody: a nil pointer body is an error (gob panics on one),
// and the codec's connection is closed.
func TestNilPointerBody(t *testing.T) {
	cc, sc := net.Pipe()
	defer sc.Close()
	rec := &pipeConn{Conn: cc}
	codec := gobrpc.NewClientCodec(rec)
	err := codec.WriteRequest(&rpc.Request{ServiceMethod: "Arith.Add", Seq: 1}, (*Args)(nil))
	if err == nil || err.Error() != "gobrpc: cannot encode a nil pointer (*gobrpc_test.Args)" {
		t.Fatalf("a nil *Args body: %v", err)
	}
	if rec.closes != 1 {
		t.Fatalf("the connection was closed %d times, want 1", rec.closes)
	}
	server := gobrpc.NewServerCodec(&stream{Reader: strings.NewReader("")})
	if err := server.WriteResponse(nil, 1); err == nil || !strings.Contains(err.Error(), "nil pointer (*rpc.Response)") {
		t.Fatalf("a nil header: %v", err)
	}
}

// failingWriter is a connection whose writes fail.
type failingWriter struct{ stream }

func (*failingWriter) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

// TestFailedWriteClosesTheConnection: rpc.Server ignores WriteResponse's
// error, so a response that cannot be written would leave its caller
// waiting; the codec closes the connection instead.
func TestFailedWriteClosesTheConnection(t *testing.T) {
	conn := &failingWriter{stream{Reader: strings.NewReader("")}}
	codec := gobrpc.NewServerCodec(conn)
	if err := codec.WriteResponse(&rpc.Response{Seq: 1}, 1); err == nil || err.Error() != "write: broken pipe" {
		t.Fatalf("a response over a broken connection: %v", err)
	}
	if !conn.closed {
		t.Fatal("the connection is still open after a response could not be written")
	}
}
