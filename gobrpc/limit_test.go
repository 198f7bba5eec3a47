package gobrpc_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/rpc"
	"runtime"
	"strings"
	"testing"
	"time"

	transport "github.com/zerodial/transport"
	"github.com/zerodial/transport/gobrpc"
)

func TestDefaultMaxMessageIsTheFrameLimit(t *testing.T) {
	if gobrpc.DefaultMaxMessage != transport.DefaultMaxFrameSize {
		t.Fatalf("DefaultMaxMessage = %d, transport.DefaultMaxFrameSize = %d", gobrpc.DefaultMaxMessage, transport.DefaultMaxFrameSize)
	}
}

// bodyOf returns a []byte whose gob message is exactly size bytes long.
func bodyOf(t *testing.T, size uint64) []byte {
	t.Helper()
	n := size
	for messageLen(t, make([]byte, n)) > size {
		n--
	}
	b := bytes.Repeat([]byte{'z'}, int(n))
	if got := messageLen(t, b); got != size {
		t.Fatalf("no []byte has a message of %d bytes (%d of %d)", size, n, got)
	}
	return b
}

// TestServerLimit: a stdlib client's request body of exactly the limit is
// served; one byte more fails with the limit's error, the server codec
// refuses it, the connection closes, and a new connection works.
func TestServerLimit(t *testing.T) {
	const limit = 256 << 10
	ts := startServer(t, true, gobrpc.WithMaxMessage(limit))
	c := dial(t, ts.addr, false)
	var n int
	at := bodyOf(t, limit)
	if err := c.Call("Blob.Len", at, &n); err != nil || n != len(at) {
		t.Fatalf("a body of %d bytes in a message of the limit: %d, %v", len(at), n, err)
	}
	over := bodyOf(t, limit+1)
	err := c.Call("Blob.Len", over, &n)
	want := "gobrpc: message of 262145 bytes, limit 262144"
	// The reply saying so is written before the connection closes, but the
	// client may still be sending the body when it does, and a reset can
	// overtake the reply.
	var se rpc.ServerError
	if err == nil || errors.As(err, &se) && string(se) != want {
		t.Fatalf("a message one byte over the limit: %v, want %q or the connection's end", err, want)
	}
	var tooLarge *gobrpc.MessageTooLargeError
	if errs := ts.errs(); len(errs) == 0 || !errors.As(errs[0], &tooLarge) || *tooLarge != (gobrpc.MessageTooLargeError{Size: limit + 1, Limit: limit}) || errs[0].Error() != want {
		t.Fatalf("the server codec read %v, want %q", errs, want)
	}
	if !errors.Is(ts.errs()[0], transport.ErrFrameTooLarge) {
		t.Fatalf("%v does not match transport.ErrFrameTooLarge", ts.errs()[0])
	}
	if err := c.Call("Arith.Add", Args{1, 2}, &n); err == nil {
		t.Fatal("the connection still serves after a message over the limit")
	}
	if err := dial(t, ts.addr, false).Call("Blob.Len", at, &n); err != nil || n != len(at) {
		t.Fatalf("a new connection: %d, %v", n, err)
	}
}

// TestServerLimitReply: on a net.Pipe nothing can overtake the reply, so the
// stdlib client's call ends with the limit's error itself.
func TestServerLimitReply(t *testing.T) {
	cc, sc := net.Pipe()
	srv := newRPCServer(t)
	done := make(chan struct{})
	go func() { srv.ServeCodec(gobrpc.NewServerCodec(sc, gobrpc.WithMaxMessage(1000))); close(done) }()
	c := rpc.NewClient(cc)
	defer func() { c.Close(); <-done }()
	var n int
	err := c.Call("Blob.Len", bodyOf(t, 1001), &n)
	if want := (rpc.ServerError("gobrpc: message of 1001 bytes, limit 1000")); err != want {
		t.Fatalf("a message over the limit: %v, want %q", err, want)
	}
}

// TestClientLimit: a stdlib server's reply body over the client codec's
// limit fails its call with the limit's error and ends the connection.
func TestClientLimit(t *testing.T) {
	const limit = 64 << 10
	ts := startServer(t, false)
	c := dial(t, ts.addr, true, gobrpc.WithMaxMessage(limit))
	var b []byte
	at := len(bodyOf(t, limit))
	if err := c.Call("Blob.Make", at, &b); err != nil || len(b) != at {
		t.Fatalf("a reply in a message of the limit: %d bytes, %v", len(b), err)
	}
	err := c.Call("Blob.Make", at+1, &b)
	if want := "reading body gobrpc: message of 65537 bytes, limit 65536"; err == nil || err.Error() != want {
		t.Fatalf("a reply one byte over the limit: %v, want %q", err, want)
	}
	var n int
	if err := c.Call("Arith.Add", Args{1, 2}, &n); err == nil {
		t.Fatal("the connection still works after a message over the limit")
	}
	if err := dial(t, ts.addr, true, gobrpc.WithMaxMessage(limit)).Call("Blob.Make", at, &b); err != nil || len(b) != at {
		t.Fatalf("a new connection: %d bytes, %v", len(b), err)
	}
}

// TestCountRefusedBeforeItsBytes: a count of 1 GiB fails at once, with none
// of its bytes sent, and every read after it fails the same way.
func TestCountRefusedBeforeItsBytes(t *testing.T) {
	cc, sc := net.Pipe()
	defer cc.Close()
	codec := gobrpc.NewServerCodec(sc)
	defer codec.Close()
	go cc.Write([]byte{0xfc, 0x40, 0, 0, 0}) // 1 << 30, in gob's encoding
	got := make(chan error, 1)
	go func() {
		var h rpc.Request
		got <- codec.ReadRequestHeader(&h)
	}()
	select {
	case err := <-got:
		var tooLarge *gobrpc.MessageTooLargeError
		if !errors.As(err, &tooLarge) || err.Error() != "gobrpc: message of 1073741824 bytes, limit 4194304" {
			t.Fatalf("a count of 1 GiB: %v", err)
		}
		var h rpc.Request
		if again := codec.ReadRequestHeader(&h); again != err {
			t.Fatalf("the read after it: %v, want %v", again, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a count over the limit waited for its bytes")
	}
}

// TestCountAllocatesNothing: a count just under gob's 10 MB read chunk
// would have gob allocate all of it before a byte arrives; over the limit,
// the codec allocates (almost) nothing.
func TestCountAllocatesNothing(t *testing.T) {
	const claim = 9 << 20
	input := []byte{0xfd, claim >> 16, 0, 0}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	codec := gobrpc.NewServerCodec(&stream{Reader: io.MultiReader(bytes.NewReader(input), strings.NewReader(strings.Repeat("x", 100)))})
	var h rpc.Request
	err := codec.ReadRequestHeader(&h)
	runtime.ReadMemStats(&after)
	var tooLarge *gobrpc.MessageTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != claim {
		t.Fatalf("a count of %d: %v", claim, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reading a count of %d allocated %d bytes", claim, got)
	}
}
