package httpzerodial_test

import (
	"context"
	"io"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// count calls Calc.Count to n over p and returns what arrived, its
// trailers and the stream's error.
func count(t *testing.T, cl *connect.Client[Pair, int], n int, header map[string]string) ([]int, map[string]string, error) {
	req := connect.NewRequest(&Pair{A: n})
	for k, v := range header {
		req.Header().Set(k, v)
	}
	st, err := cl.CallServerStream(context.Background(), req)
	require.NoError(t, err)
	defer st.Close()
	var got []int
	for st.Receive() {
		got = append(got, *st.Msg())
	}
	return got, map[string]string{"counted": st.ResponseTrailer().Get("Counted")}, st.Err()
}

func TestServerStream(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			c := newCalc(t, srv)
			ts := serve(t, srv)
			for _, codec := range []connect.ClientOption{connect.WithCodec(jsonCodec{}), connect.WithCodec(msgpackCodec{})} {
				cl := client[Pair, int](t, ts, p, "/Calc/Count", codec)
				got, trailer, err := count(t, cl, 3, map[string]string{"Trace-Id": "t2"})
				require.NoError(t, err)
				assert.Equal(t, []int{1, 2, 3}, got)
				assert.Equal(t, "yes", trailer["counted"], "reply metadata as a trailer")
				seen := c.seen()
				assert.Equal(t, dispatch.Metadata{"trace-id": "t2"}, seen.md)
				assert.Equal(t, dispatch.PathHTTP, seen.info.Path)
				assert.Equal(t, "Calc.Count", seen.info.Method)

				got, _, err = count(t, cl, -1, nil)
				assert.Empty(t, got)
				assert.Equal(t, connect.CodeOutOfRange, codeOf(t, err))
				var ce *connect.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "cannot count to a negative", ce.Message())
			}
		})
	}
}

// h2 are the protocols that carry streams both ways at once.
func h2() []protocol {
	var ps []protocol
	for _, p := range protocols {
		if p.h2 {
			ps = append(ps, p)
		}
	}
	return ps
}

func TestBidiStream(t *testing.T) {
	for _, p := range h2() {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			st := client[Pair, int](t, ts, p, "/Calc/Echo").CallBidiStream(context.Background())
			// Each answer arrives before the next message goes: both
			// directions are open at once.
			for i := range 3 {
				require.NoError(t, st.Send(&Pair{A: i, B: 10}))
				got, err := st.Receive()
				require.NoError(t, err)
				assert.Equal(t, i+10, *got)
			}
			require.NoError(t, st.CloseRequest())
			_, err := st.Receive()
			assert.ErrorIs(t, err, io.EOF)
			require.NoError(t, st.CloseResponse())
		})
	}
}

func TestClientStream(t *testing.T) {
	for _, p := range h2() {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			st := client[Pair, int](t, ts, p, "/Calc/Total").CallClientStream(context.Background())
			for i := range 4 {
				require.NoError(t, st.Send(&Pair{A: i, B: 1}))
			}
			res, err := st.CloseAndReceive()
			require.NoError(t, err)
			assert.Equal(t, 10, *res.Msg)
		})
	}
}

func TestStreamBadMessage(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			cl := client[[]byte, []byte](t, ts, p, "/Calc/Count", connect.WithCodec(rawCodec{}))
			st, err := cl.CallServerStream(context.Background(), connect.NewRequest(new([]byte(`{"a":`))))
			require.NoError(t, err)
			defer st.Close()
			assert.False(t, st.Receive())
			assert.Equal(t, connect.CodeInvalidArgument, codeOf(t, st.Err()))
			assert.Contains(t, st.Err().Error(), "dispatch: decoding a message of Calc.Count: ")
		})
	}
}

func TestClientStreamOverHTTP1(t *testing.T) {
	// HTTP/1.1 carries a server stream: one message from the caller. A
	// caller that sends more is told so, and the server goes on.
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	st := client[Pair, int](t, ts, protocols[0], "/Calc/Total").CallClientStream(context.Background())
	for i := range 2 {
		require.NoError(t, st.Send(&Pair{A: i}))
	}
	_, err := st.CloseAndReceive()
	assert.Equal(t, connect.CodeUnimplemented, codeOf(t, err))
	got, _, err := count(t, client[Pair, int](t, ts, protocols[0], "/Calc/Count"), 2, nil)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, got)
}
