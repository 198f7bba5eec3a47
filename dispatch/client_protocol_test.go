package dispatch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// noConn is a Protocol whose Connect fails: DialProtocol's options are
// checked before it is called.
type noConn struct{}

func (noConn) Connect(context.Context, string) (dispatch.ProtocolConn, error) {
	return nil, assert.AnError
}
func (noConn) String() string      { return "test" }
func (noConn) Path() dispatch.Path { return "test" }
func (noConn) Codec() codec.Codec  { return codec.Msgpack }

func TestDialProtocolRefuses(t *testing.T) {
	_, err := dispatch.DialProtocol(t.Context(), nil, "a")
	require.ErrorContains(t, err, "nil Protocol")
	_, err = dispatch.DialProtocol(t.Context(), noConn{}, "a", dispatch.WithShortcut(dispatch.ShortcutCopy), dispatch.WithCodec(codec.Msgpack))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithShortcut(")
	assert.Contains(t, err.Error(), "WithCodec")
	_, err = dispatch.DialProtocol(t.Context(), noConn{}, "a")
	assert.ErrorIs(t, err, assert.AnError, "Connect's failure is Dial's")
	assert.Contains(t, err.Error(), "dial test a")
}
