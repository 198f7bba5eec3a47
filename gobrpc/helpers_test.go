package gobrpc_test

import (
	"bytes"
	"encoding/gob"
	"errors"
	"io"
	"net"
	"net/rpc"
	"strconv"
	"sync"
	"testing"

	"github.com/zerodial/transport/gobrpc"
)

// Args is Arith's argument.
type Args struct{ A, B int }

// Arith is a service with a result and an error.
type Arith int

func (Arith) Add(a Args, r *int) error { *r = a.A + a.B; return nil }

func (Arith) Fail(a Args, r *int) error { return errors.New("arith: refused " + strconv.Itoa(a.A)) }

// Blob takes and returns bodies of any size.
type Blob int

func (Blob) Len(b []byte, r *int) error { *r = len(b); return nil }

func (Blob) Make(n int, r *[]byte) error { *r = bytes.Repeat([]byte{'x'}, n); return nil }

// Opaque has no exported field, so gob cannot encode it: a reply that
// fails to encode.
type Opaque struct{ n int }

// Secret replies with an Opaque.
type Secret int

func (Secret) Get(n int, r *Opaque) error { r.n = n; return nil }

func newRPCServer(t testing.TB) *rpc.Server {
	t.Helper()
	srv := rpc.NewServer()
	for _, rcvr := range []any{new(Arith), new(Blob), new(Secret)} {
		if err := srv.Register(rcvr); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

// testServer is an rpc.Server on a loopback port, serving each connection
// with net/rpc's own codec (rpc.ServeConn) or with gobrpc's. It records the
// errors gobrpc's codec returns from its reads.
type testServer struct {
	addr string

	mu       sync.Mutex
	readErrs []error
}

func startServer(t testing.TB, ours bool, opts ...gobrpc.Option) *testServer {
	t.Helper()
	srv := newRPCServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: ln.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ours {
					srv.ServeCodec(&recorder{ServerCodec: gobrpc.NewServerCodec(c, opts...), ts: ts})
				} else {
					srv.ServeConn(c)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ts
}

func (ts *testServer) errs() []error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]error(nil), ts.readErrs...)
}

type recorder struct {
	rpc.ServerCodec
	ts *testServer
}

func (r *recorder) note(err error) error {
	if err != nil {
		r.ts.mu.Lock()
		r.ts.readErrs = append(r.ts.readErrs, err)
		r.ts.mu.Unlock()
	}
	return err
}

func (r *recorder) ReadRequestHeader(h *rpc.Request) error {
	return r.note(r.ServerCodec.ReadRequestHeader(h))
}

func (r *recorder) ReadRequestBody(v any) error { return r.note(r.ServerCodec.ReadRequestBody(v)) }

// dial connects an rpc.Client to addr with net/rpc's codec (rpc.Dial) or
// with gobrpc's, and closes it when the test ends.
func dial(t testing.TB, addr string, ours bool, opts ...gobrpc.Option) *rpc.Client {
	t.Helper()
	var (
		c   *rpc.Client
		err error
	)
	if ours {
		var conn net.Conn
		if conn, err = net.Dial("tcp", addr); err == nil {
			c = rpc.NewClientWithCodec(gobrpc.NewClientCodec(conn, opts...))
		}
	} else {
		c, err = rpc.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func kind(ours bool) string {
	if ours {
		return "gobrpc"
	}
	return "net/rpc"
}

// messageLen is the length gob gives the message that carries v once v's
// type is known to the decoder: the count a codec checks against its limit.
func messageLen(t testing.TB, v any) uint64 {
	t.Helper()
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	n, width := gobCount(b.Bytes())
	if uint64(b.Len()-width) != n {
		t.Fatalf("%T: %d bytes after a count of %d", v, b.Len()-width, n)
	}
	return n
}

// gobCount parses the count at the start of a gob message.
func gobCount(p []byte) (n uint64, width int) {
	if p[0] <= 0x7f {
		return uint64(p[0]), 1
	}
	w := -int(int8(p[0]))
	for _, c := range p[1 : 1+w] {
		n = n<<8 | uint64(c)
	}
	return n, 1 + w
}

// pipeConn is one end of a net.Pipe that counts Close and may record what
// is written.
type pipeConn struct {
	net.Conn
	mu      sync.Mutex
	written bytes.Buffer
	closes  int
}

func (p *pipeConn) Write(b []byte) (int, error) {
	n, err := p.Conn.Write(b)
	p.mu.Lock()
	p.written.Write(b[:n])
	p.mu.Unlock()
	return n, err
}

func (p *pipeConn) Close() error {
	p.mu.Lock()
	p.closes++
	p.mu.Unlock()
	return p.Conn.Close()
}

func (p *pipeConn) bytes() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.written.Bytes())
}

// stream is a fixed input: reads come from r, writes are dropped.
type stream struct {
	io.Reader
	closed bool
}

func (s *stream) Write(p []byte) (int, error) { return len(p), nil }
func (s *stream) Close() error                { s.closed = true; return nil }
