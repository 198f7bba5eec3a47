package grpczerodial

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
)

// A status never matches io.EOF, RecvMsg's word for a clean end, though
// dispatch words a connection the server closed as its end: the other
// errors it wraps still match, for errors.Is and errors.As.
func TestStatusNeverEOF(t *testing.T) {
	closed := fmt.Errorf("%w: the server closed the connection: %w", dispatch.ErrShutdown, io.EOF)
	err := toStatusError(closed)
	assert.False(t, errors.Is(err, io.EOF), "a failure taken for a clean end: %v", err)
	assert.True(t, errors.Is(err, dispatch.ErrShutdown))
	assert.Equal(t, codes.Unavailable, status.Code(err))

	de := &dispatch.Error{Code: dispatch.CodeUnavailable, Message: "gone"}
	err = toStatusError(fmt.Errorf("%w: %w", de, io.EOF))
	assert.False(t, errors.Is(err, io.EOF))
	var got *dispatch.Error
	assert.True(t, errors.As(err, &got))
	assert.Equal(t, "gone", got.Message)
}
