package grpczerodial_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
)

// Pair is the arguments of a method of Go types, registered with dispatch.
type Pair struct{ A, B int }

// msgpackCodec is a gRPC codec (encoding.Codec) of zerodial's msgpack.
type msgpackCodec struct{}

func (msgpackCodec) Name() string { return "msgpack" }

// Marshal encodes into bytes of their own: msgpack's Marshal hands a
// []byte back as it is.
func (msgpackCodec) Marshal(v any) ([]byte, error) {
	return codec.Msgpack.(codec.Appender).AppendMarshal(nil, v)
}

func (msgpackCodec) Unmarshal(b []byte, v any) error { return codec.Msgpack.Unmarshal(b, v) }

// msgpackCodecV2 is msgpackCodec as gRPC's encoding.CodecV2.
type msgpackCodecV2 struct{}

func (msgpackCodecV2) Name() string { return "msgpack" }

func (msgpackCodecV2) Marshal(v any) (mem.BufferSlice, error) {
	b, err := msgpackCodec{}.Marshal(v)
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (msgpackCodecV2) Unmarshal(data mem.BufferSlice, v any) error {
	return msgpackCodec{}.Unmarshal(data.Materialize(), v)
}

var _ encoding.CodecV2 = msgpackCodecV2{}

// A call given grpc.ForceCodec (or ForceCodecV2) encodes its messages with
// it, so that code written against grpc.ClientConnInterface calls a
// method of Go types registered with dispatch, unary and streaming, on
// every path; its failures are statuses that wrap dispatch's error, for
// errors.Is and errors.As. It was refused, Unimplemented.
func TestForceCodec(t *testing.T) {
	register := func(srv *dispatch.Server) {
		require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, p *Pair, sum *int) error {
			if p.A < 0 {
				return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "negative"}
			}
			*sum = p.A + p.B
			return nil
		}))
		require.NoError(t, dispatch.HandleStream(srv, "Calc.Count", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
			for p, err := range s.Recv() {
				if err != nil {
					return err
				}
				for i := 1; i <= p.A; i++ {
					if err := s.Send(&i); err != nil {
						return err
					}
				}
			}
			return nil
		}))
	}
	forEachPath(t, setup{register: func(*grpczerodial.Registrar) {}, methods: register}, func(t *testing.T, p path, e *env) {
		for _, force := range []grpc.CallOption{grpc.ForceCodec(msgpackCodec{}), grpc.ForceCodecV2(msgpackCodecV2{})} {
			var sum int
			require.NoError(t, e.cc.Invoke(context.Background(), "/Calc/Add", &Pair{A: 2, B: 3}, &sum, force))
			assert.Equal(t, 5, sum)

			err := e.cc.Invoke(context.Background(), "/Calc/Add", &Pair{A: -1}, &sum, force)
			assert.Equal(t, codes.OutOfRange, status.Code(err))
			var de *dispatch.Error
			require.True(t, errors.As(err, &de), "%v", err)
			assert.Equal(t, dispatch.CodeOutOfRange, de.Code)

			st, err := e.cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/Calc/Count", force)
			require.NoError(t, err)
			require.NoError(t, st.SendMsg(&Pair{A: 3}))
			require.NoError(t, st.CloseSend())
			var got []int
			for {
				var n int
				if err := st.RecvMsg(&n); err != nil {
					require.ErrorIs(t, err, io.EOF)
					break
				}
				got = append(got, n)
			}
			assert.Equal(t, []int{1, 2, 3}, got)
		}

		// A Client closed: Unavailable, and dispatch's ErrShutdown.
		require.NoError(t, e.c.Close())
		var sum int
		err := e.cc.Invoke(context.Background(), "/Calc/Add", &Pair{A: 2, B: 3}, &sum, grpc.ForceCodec(msgpackCodec{}))
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, dispatch.ErrShutdown)
	})
}

// keepCodec is a forced codec that keeps the bytes it decodes, as gRPC
// proxies' frame codecs do: grpc-go hands a codec bytes of its own.
type keepCodec struct{}

func (keepCodec) Name() string                  { return "keep" }
func (keepCodec) Marshal(v any) ([]byte, error) { return append([]byte(nil), *v.(*[]byte)...), nil }
func (keepCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = b
	return nil
}

// A forced codec may keep the bytes it is given: the reply of a unary call
// and a stream's messages are its own, not a buffer the next call or the
// next message reuses (the reply read "bbb…" after later calls, the
// stream's first message the last one's bytes).
func TestForceCodecKeepsItsBytes(t *testing.T) {
	register := func(srv *dispatch.Server) {
		require.NoError(t, dispatch.Handle(srv, "Raw.Echo", func(ctx context.Context, in *codec.Raw, out *codec.Raw) error {
			*out = append((*out)[:0], *in...)
			return nil
		}))
		require.NoError(t, dispatch.HandleStream(srv, "Raw.Repeat", func(ctx context.Context, s *dispatch.ServerStream[codec.Raw, codec.Raw]) error {
			for m, err := range s.Recv() {
				if err != nil {
					return err
				}
				for i := range 5 {
					b := codec.Raw(bytes.Repeat([]byte{'a' + byte(i)}, len(*m)))
					if err := s.Send(&b); err != nil {
						return err
					}
				}
			}
			return nil
		}))
	}
	force := grpc.ForceCodec(keepCodec{})
	forEachPath(t, setup{register: func(*grpczerodial.Registrar) {}, methods: register}, func(t *testing.T, p path, e *env) {
		ctx := context.Background()
		first := bytes.Repeat([]byte("a"), 64)
		var kept []byte
		require.NoError(t, e.cc.Invoke(ctx, "/Raw/Echo", &first, &kept, force))
		for range 50 {
			other, reply := bytes.Repeat([]byte("b"), 64), []byte(nil)
			require.NoError(t, e.cc.Invoke(ctx, "/Raw/Echo", &other, &reply, force))
		}
		assert.Equal(t, string(first), string(kept), "the first reply, after 50 more calls")

		st, err := e.cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/Raw/Repeat", force)
		require.NoError(t, err)
		seed := bytes.Repeat([]byte("x"), 64)
		require.NoError(t, st.SendMsg(&seed))
		require.NoError(t, st.CloseSend())
		var got [][]byte
		for {
			var m []byte
			if err := st.RecvMsg(&m); err != nil {
				require.ErrorIs(t, err, io.EOF)
				break
			}
			got = append(got, m)
		}
		require.Len(t, got, 5)
		for i, m := range got {
			assert.Equal(t, strings.Repeat(string(rune('a'+i)), 64), string(m), "message %d, after the stream's end", i)
		}
	})
}
