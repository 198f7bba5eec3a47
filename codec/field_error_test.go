package codec_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
)

type reserveReq struct {
	SKU   string
	Qty   int64
	Items []lineItem
	Tags  map[string]int
	Note  *string `msgpack:"note"`
	embeddedPart
}

type lineItem struct {
	Name string
	N    uint8
}

type embeddedPart struct{ Depth int }

// A decoding failure names the field, what the body holds there and the
// type the field wants, instead of msgpack's "invalid code=a3 decoding
// int64".
func TestFieldError(t *testing.T) {
	enc := func(v any) []byte {
		b, err := codec.Msgpack.Marshal(v)
		require.NoError(t, err)
		return b
	}
	for name, tc := range map[string]struct {
		body any
		into any
		want string
	}{
		"a string for an int": {map[string]any{"SKU": "a", "Qty": "three"}, new(reserveReq),
			`codec: cannot unmarshal into *codec_test.reserveReq: field Qty: got string "three", want int64`},
		"an element's field": {map[string]any{"Items": []any{map[string]any{"Name": "x"}, map[string]any{"N": "many"}}}, new(reserveReq),
			`codec: cannot unmarshal into *codec_test.reserveReq: field Items[1].N: got string "many", want uint8`},
		"a map's value": {map[string]any{"Tags": map[string]any{"k": []int{1}}}, new(reserveReq),
			`codec: cannot unmarshal into *codec_test.reserveReq: field Tags["k"]: got array of 1 items, want int`},
		"a pointer's target": {map[string]any{"note": 5}, new(reserveReq),
			`codec: cannot unmarshal into *codec_test.reserveReq: field note: got int 5, want string`},
		"an embedded struct's field": {map[string]any{"Depth": true}, new(reserveReq),
			`codec: cannot unmarshal into *codec_test.reserveReq: field Depth: got bool true, want int`},
		"a reply of a newer type into an older one": {map[string]any{"Qty": 1}, new(int64),
			`codec: cannot unmarshal into *int64: got map of 1 entries, want int64`},
		"a struct where a field is a map": {map[string]any{"Items": map[string]any{"Name": "x"}}, new(reserveReq),
			`codec: cannot unmarshal into *codec_test.reserveReq: field Items: got map of 1 entries, want []codec_test.lineItem`},
	} {
		t.Run(name, func(t *testing.T) {
			err := codec.Msgpack.Unmarshal(enc(tc.body), tc.into)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			var fe *codec.FieldError
			require.ErrorAs(t, err, &fe)
			assert.NotNil(t, fe.Err, "the decoder's own error is kept")
			assert.NotErrorIs(t, err, codec.ErrUnknownField)
		})
	}
}

// Strict decoding refuses a key that names no field, where Unmarshal drops
// it; a misspelled field ("Qtty") is then an error, not a zero Qty.
func TestUnmarshalStrict(t *testing.T) {
	body, err := codec.Msgpack.Marshal(map[string]any{"SKU": "a", "Qtty": 1})
	require.NoError(t, err)
	var r reserveReq
	require.NoError(t, codec.Msgpack.Unmarshal(body, &r), "ignored when not strict")
	assert.Equal(t, reserveReq{SKU: "a"}, r)

	strict := codec.Msgpack.(codec.StrictUnmarshaler)
	err = strict.UnmarshalStrict(body, new(reserveReq))
	require.ErrorIs(t, err, codec.ErrUnknownField)
	assert.Equal(t, `codec: cannot unmarshal into *codec_test.reserveReq: unknown field Qtty (codec_test.reserveReq has no such field)`, err.Error())

	nested, err := codec.Msgpack.Marshal(map[string]any{"Items": []any{map[string]any{"Name": "x", "Size": 2}}})
	require.NoError(t, err)
	err = strict.UnmarshalStrict(nested, new(reserveReq))
	require.ErrorIs(t, err, codec.ErrUnknownField)
	assert.Equal(t, `codec: cannot unmarshal into *codec_test.reserveReq: unknown field Items[0].Size (codec_test.lineItem has no such field)`, err.Error())

	// Every field msgpack knows passes: tags, embedded structs' fields.
	ok, err := codec.Msgpack.Marshal(map[string]any{"SKU": "a", "Qty": 2, "note": "n", "Depth": 1, "Tags": map[string]int{"z": 1}})
	require.NoError(t, err)
	require.NoError(t, strict.UnmarshalStrict(ok, new(reserveReq)))
}

type chain struct {
	Next []chain
	N    int
}

// The walk that explains a failure reads each byte of the body once and
// spells out the path only for the error: a body nested MaxDepth deep, its
// mismatch at the bottom, is explained with the whole path.
func TestFieldErrorDeep(t *testing.T) {
	depth := codec.MaxDepth/2 - 1 // a map and an array a level
	var body []byte
	for range depth {
		body = append(body, 0x81, 0xa4, 'N', 'e', 'x', 't', 0x91) // {"Next": [
	}
	body = append(body, 0x81, 0xa1, 'N', 0xa1, 'x') // {"N": "x"}
	err := codec.Msgpack.Unmarshal(body, new(chain))
	var fe *codec.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, strings.Repeat("Next[0].", depth)+"N", fe.Field)
	assert.Equal(t, `string "x"`, fe.Got)
	assert.Equal(t, "int", fe.Want)
}
