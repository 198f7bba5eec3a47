package gobrpc_test

import (
	"bytes"
	"net/rpc"
	"testing"

	"github.com/zerodial/transport/gobrpc"
)

// FuzzServerCodec feeds arbitrary bytes to the server codec's read loop as
// rpc.Server runs it (a header, then its body, decoded or discarded; a body
// that fails goes on to the next header) and answers each request: no
// panic, and the loop ends. The limit is small, so what one message may
// allocate stays small. Seeds: a stream an rpc.Dial client sent, and pieces
// of it.
func FuzzServerCodec(f *testing.F) {
	real := captureStream(f)
	f.Add(real)
	msgs := splitMessages(f, real)
	for i := range msgs {
		f.Add(bytes.Join(msgs[:i], nil))
		f.Add(bytes.Join(msgs[i:], nil))
		f.Add(msgs[i][:len(msgs[i])/2])
	}
	f.Add([]byte{0xfc, 0x40, 0, 0, 0})
	f.Add(gobOf(f, 42, struct{ X string }{"x"}))
	f.Fuzz(func(t *testing.T, input []byte) {
		codec := gobrpc.NewServerCodec(&stream{Reader: bytes.NewReader(input)}, gobrpc.WithMaxMessage(64<<10))
		defer codec.Close()
		// Each header read takes at least one byte or fails.
		for range len(input) + 1 {
			var h rpc.Request
			if err := codec.ReadRequestHeader(&h); err != nil {
				return
			}
			var (
				args Args
				body any = &args
				err  error
			)
			switch h.Seq % 3 {
			case 1:
				body = nil // rpc.Server discards the body of a call it cannot route
			case 2:
				body = new([]byte)
			}
			err = codec.ReadRequestBody(body)
			resp := rpc.Response{ServiceMethod: h.ServiceMethod, Seq: h.Seq}
			if err != nil {
				resp.Error = err.Error()
			}
			if codec.WriteResponse(&resp, args) != nil {
				return
			}
		}
		t.Fatalf("%d headers read from %d bytes", len(input)+1, len(input))
	})
}
