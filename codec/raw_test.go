package codec_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
)

func TestRawMarshalPassesThrough(t *testing.T) {
	raw := []byte{0xc1, 0xff, 'n', 'o', 't', ' ', 'm', 's', 'g', 'p', 'a', 'c', 'k'}
	frame := codec.Raw(raw)
	for _, v := range []any{raw, frame, &raw, &frame} {
		b, err := codec.Msgpack.Marshal(v)
		require.NoError(t, err, "%T", v)
		assert.Equal(t, raw, b, "%T", v)
		assert.Same(t, &raw[0], &b[0], "Marshal of %T returns the same bytes", v)

		out, err := codec.Msgpack.(codec.Appender).AppendMarshal([]byte("x"), v)
		require.NoError(t, err)
		assert.Equal(t, append([]byte("x"), raw...), out, "%T", v)
	}
}

func TestRawUnmarshalCopiesIntoCapacity(t *testing.T) {
	data := []byte{0xc1, 1, 2, 3} // not msgpack, and not checked
	buf := make([]byte, 1, 16)
	require.NoError(t, codec.Msgpack.Unmarshal(data, &buf))
	assert.Equal(t, data, buf)
	assert.Equal(t, 16, cap(buf), "the target's capacity is reused")
	data[0] = 9
	assert.Equal(t, byte(0xc1), buf[0], "the body is copied")

	var f codec.Raw
	require.NoError(t, codec.Msgpack.Unmarshal(data, &f))
	assert.Equal(t, codec.Raw(data), f)

	require.NoError(t, codec.Msgpack.Unmarshal(nil, &f))
	assert.Empty(t, f)
}

func TestRawNilPointers(t *testing.T) {
	var np *[]byte
	var nf *codec.Raw
	for _, v := range []any{np, nf} {
		_, err := codec.Msgpack.Marshal(v)
		assert.ErrorIs(t, err, codec.ErrNilPointer, "Marshal %T", v)
		_, err = codec.Msgpack.(codec.Appender).AppendMarshal(nil, v)
		assert.ErrorIs(t, err, codec.ErrNilPointer, "AppendMarshal %T", v)
		assert.ErrorIs(t, codec.Msgpack.Unmarshal([]byte{1}, v), codec.ErrNilPointer, "Unmarshal %T", v)
	}
}

// Only []byte and Raw are raw: other byte-slice types, and byte slices
// inside other values, are msgpack bin values.
func TestOtherByteSlicesAreEncoded(t *testing.T) {
	type blob []byte
	b, err := codec.Msgpack.Marshal(blob{1, 2})
	require.NoError(t, err)
	assert.Equal(t, []byte{0xc4, 2, 1, 2}, b)

	var back blob
	require.NoError(t, codec.Msgpack.Unmarshal(b, &back))
	assert.Equal(t, blob{1, 2}, back)

	b, err = codec.Msgpack.Marshal(struct{ F codec.Raw }{codec.Raw{1}})
	require.NoError(t, err)
	var s struct{ F codec.Raw }
	require.NoError(t, codec.Msgpack.Unmarshal(b, &s))
	assert.Equal(t, codec.Raw{1}, s.F)
}

// upper is a RawBody whose encoding is its text in capitals.
type upper struct{ text string }

func (u *upper) AppendBody(dst []byte) ([]byte, error) {
	return append(dst, strings.ToUpper(u.text)...), nil
}

func (u *upper) SetBody(data []byte) error {
	u.text = strings.ToLower(string(data))
	return nil
}

// A RawBody encodes itself into the sender's buffer and decodes itself,
// with no msgpack framing around its body.
func TestRawBodyPassesThrough(t *testing.T) {
	b, err := codec.Msgpack.Marshal(&upper{"abc"})
	require.NoError(t, err)
	assert.Equal(t, "ABC", string(b))

	buf := make([]byte, 1, 64)
	buf[0] = 'x'
	out, err := codec.Msgpack.(codec.Appender).AppendMarshal(buf, &upper{"abc"})
	require.NoError(t, err)
	assert.Equal(t, "xABC", string(out))
	assert.Same(t, &buf[0], &out[0], "appended in the sender's buffer")

	var u upper
	require.NoError(t, codec.Msgpack.Unmarshal([]byte("DEF"), &u))
	assert.Equal(t, "def", u.text)
}

// PassesThrough names exactly the types Msgpack hands through: Raw,
// []byte and RawBodies (the type, or its pointer, implementing it); other
// byte slices are encoded, and so is everything else.
func TestPassesThrough(t *testing.T) {
	type bytes []byte
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[codec.Raw]():  true,
		reflect.TypeFor[[]byte]():     true,
		reflect.TypeFor[upper]():      true, // *upper is a RawBody
		reflect.TypeFor[*upper]():     true,
		reflect.TypeFor[bytes]():      false,
		reflect.TypeFor[string]():     false,
		reflect.TypeFor[*codec.Raw](): false, // a method's type, not a pointer to it
		nil:                           false,
	} {
		assert.Equal(t, want, codec.PassesThrough(typ), "%v", typ)
	}
}
