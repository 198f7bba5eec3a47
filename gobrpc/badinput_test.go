package gobrpc_test

import (
	"bytes"
	"encoding/gob"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/rpc"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerodial/transport/gobrpc"
)

// captureStream returns the bytes an rpc.Dial client sends for a few calls.
func captureStream(t testing.TB) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := rpc.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// Go sends each request before it returns; no reply is needed.
	c.Go("Arith.Add", Args{1, 2}, new(int), make(chan *rpc.Call, 1))
	c.Go("Blob.Len", []byte("a body"), new(int), make(chan *rpc.Call, 1))
	c.Go("Arith.Fail", Args{-3, 1 << 40}, new(int), make(chan *rpc.Call, 1))
	c.Go("Arith.Nope", Args{}, new(int), make(chan *rpc.Call, 1))
	c.Close()
	b := <-got
	if len(b) == 0 {
		t.Fatal("captured no stream")
	}
	return b
}

// splitMessages cuts a gob stream into its messages, counts included.
func splitMessages(t testing.TB, p []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(p) > 0 {
		n, w := gobCount(p)
		if uint64(len(p)) < uint64(w)+n {
			t.Fatalf("a message of %d bytes with %d left", n, len(p)-w)
		}
		out = append(out, p[:w+int(n)])
		p = p[w+int(n):]
	}
	return out
}

// serveInput reads requests from input as rpc.Server does (a body read
// that fails goes on to the next header), and returns the first error of
// each kind: reading a header, reading a body.
func serveInput(input []byte) (headers int, headerErr, bodyErr error) {
	codec := gobrpc.NewServerCodec(&stream{Reader: bytes.NewReader(input)})
	defer codec.Close()
	for {
		var h rpc.Request
		if err := codec.ReadRequestHeader(&h); err != nil {
			return headers, err, bodyErr
		}
		headers++
		var args Args
		if err := codec.ReadRequestBody(&args); err != nil && bodyErr == nil {
			bodyErr = err
		}
	}
}

func gobOf(t testing.TB, vs ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestBadInput: each malformed stream ends the server codec's reads with a
// clear error, in the place it is malformed.
func TestBadInput(t *testing.T) {
	real := captureStream(t)
	msgs := splitMessages(t, real)
	typedef := msgs[0] // rpc.Request's type, before the first header
	firstBody := len(msgs[0]) + len(msgs[1])
	garbage := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	cat := func(ps ...[]byte) []byte { return bytes.Join(ps, nil) }
	cases := []struct {
		name      string
		input     []byte
		headers   int    // headers read before the stream fails
		headerErr string // the error that ends it
		bodyErr   string // the first failed body, if any
	}{
		// Blob.Len's []byte read as Args: the body fails, the stream goes on.
		{"the whole stream", real, 4, "EOF", "gob: type mismatch in decoder: want struct type gobrpc_test.Args; got non-struct"},
		{"nothing", nil, 0, "EOF", ""},
		{"half a type definition", typedef[:len(typedef)/2], 0, "unexpected EOF", ""},
		{"a count cut short", []byte{0xfe, 0x01}, 0, "unexpected EOF", ""},
		{"a body cut short", real[:firstBody+len(msgs[2])/2], 1, "unexpected EOF", "unexpected EOF"},
		{"a header over the limit", []byte{0xfc, 1, 0, 0, 0}, 0, "gobrpc: message of 16777216 bytes, limit 4194304", ""},
		{"a body over the limit", cat(real[:firstBody], []byte{0xfd, 0x40, 0, 1}), 1,
			"gobrpc: message of 4194305 bytes, limit 4194304", "gobrpc: message of 4194305 bytes, limit 4194304"},
		{"a count of nine bytes", []byte{0xf7, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0, "gobrpc: message count of 9 bytes, at most 8", ""},
		{"a count byte of 0x80", []byte{0x80}, 0, "gobrpc: message count of 128 bytes, at most 8", ""},
		{"an int for a header", gobOf(t, 42), 0, "gob: type mismatch in decoder: want struct type rpc.Request; got non-struct", ""},
		{"another struct for a header", gobOf(t, struct{ X string }{"x"}), 0, "gob: type mismatch: no fields matched compiling decoder for Request", ""},
		{"an HTTP request", []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n" + strings.Repeat(" ", 64)), 0, "", ""},
		{"random bytes", garbage, 0, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			headers, headerErr, bodyErr := serveInput(tc.input)
			if headers != tc.headers {
				t.Errorf("%d headers read, want %d", headers, tc.headers)
			}
			switch {
			case headerErr == nil:
				t.Fatal("the stream never failed")
			case tc.headerErr == "" && errors.Is(headerErr, io.EOF):
				t.Errorf("ended with %v, want an error that says what is wrong", headerErr)
			case tc.headerErr != "" && headerErr.Error() != tc.headerErr:
				t.Errorf("ended with %q, want %q", headerErr, tc.headerErr)
			}
			if got := errString(bodyErr); got != tc.bodyErr {
				t.Errorf("the first body failed with %q, want %q", got, tc.bodyErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCloseUnblocksAHalfSentMessage: a peer that stops halfway through a
// type definition holds a read only until Close, which closes the
// connection once; every method after it fails with net.ErrClosed.
func TestCloseUnblocksAHalfSentMessage(t *testing.T) {
	typedef := splitMessages(t, captureStream(t))[0]
	for _, side := range []string{"server", "client"} {
		t.Run(side, func(t *testing.T) {
			cc, sc := net.Pipe()
			defer cc.Close()
			conn := &pipeConn{Conn: sc}
			var server rpc.ServerCodec
			var client rpc.ClientCodec
			var read func() error
			var closer io.Closer
			if side == "server" {
				server = gobrpc.NewServerCodec(conn)
				read, closer = func() error { return server.ReadRequestHeader(new(rpc.Request)) }, server
			} else {
				client = gobrpc.NewClientCodec(conn)
				read, closer = func() error { return client.ReadResponseHeader(new(rpc.Response)) }, client
			}
			var wg sync.WaitGroup
			got := make(chan error, 1)
			wg.Add(1)
			go func() { defer wg.Done(); got <- read() }()
			// net.Pipe's Write returns once the reader has taken all of it.
			if _, err := cc.Write(typedef[:len(typedef)/2]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			select {
			case err := <-got:
				t.Fatalf("a read of half a message returned before Close: %v", err)
			default:
			}
			if err := closer.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			select {
			case err := <-got:
				if err == nil {
					t.Fatal("the read ended without an error")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Close left the read waiting")
			}
			wg.Wait()
			if err := closer.Close(); err != nil {
				t.Fatalf("a second Close: %v", err)
			}
			if conn.closes != 1 {
				t.Fatalf("the connection was closed %d times, want 1", conn.closes)
			}
			var after []error
			if server != nil {
				after = []error{
					server.ReadRequestHeader(new(rpc.Request)),
					server.ReadRequestBody(new(Args)),
					server.WriteResponse(&rpc.Response{Seq: 1}, 1),
				}
			} else {
				after = []error{
					client.ReadResponseHeader(new(rpc.Response)),
					client.ReadResponseBody(new(int)),
					client.WriteRequest(&rpc.Request{Seq: 1, ServiceMethod: "Arith.Add"}, Args{}),
				}
			}
			for i, err := range after {
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("method %d after Close: %v, want net.ErrClosed", i, err)
				}
			}
		})
	}
}
