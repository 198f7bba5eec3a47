package grpczerodial_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// A message over the frame limit (4 MiB, gRPC's default too) is refused
// with ResourceExhausted: a call's request on every path but the direct
// shortcut, which encodes nothing and measures nothing (dispatch.Borrows);
// a stream's message on every path, and the stream goes on; over HTTP
// the Handler refuses it, and the stream ends (overHTTP).
func TestMessageTooLarge(t *testing.T) {
	forEachPath(t, setup{}, func(t *testing.T, p path, e *env) {
		tc := testpb.NewTestServiceClient(e.cc)
		big := &testpb.Payload{Body: make([]byte, 5<<20)}
		_, err := tc.UnaryCall(context.Background(), &testpb.SimpleRequest{Payload: big})
		if p.name == "shortcut-direct" {
			require.NoError(t, err)
		} else {
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		}

		s, err := tc.StreamingInputCall(context.Background())
		require.NoError(t, err)
		err = s.Send(&testpb.StreamingInputCallRequest{Payload: big})
		if p.overHTTP() {
			// HTTP has no frame limit of the caller's: the Handler refuses
			// the message (its read limit) and ends the stream, which
			// Send sees if the end has come by then (io.EOF, as
			// grpc-go's), and the end says why.
			if err != nil {
				require.ErrorIs(t, err, io.EOF)
			}
			_, err = s.CloseAndRecv()
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
			return
		}
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		require.NoError(t, s.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 7)}}))
		reply, err := s.CloseAndRecv()
		require.NoError(t, err)
		assert.EqualValues(t, 7, reply.GetAggregatedPayloadSize())
	})
}
