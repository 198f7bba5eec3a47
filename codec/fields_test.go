package codec_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
)

type point struct{ X, Y int }

type tagged struct {
	Name string `msgpack:"n"`
	Inner
}

type Inner struct{ Depth int }

// A non-empty map none of whose keys is a field of the target struct is a
// message of another type (gob's "no fields matched"); unknown keys beside
// known ones are ignored, so that messages can evolve.
func TestNoFieldsMatched(t *testing.T) {
	enc := func(v any) []byte {
		b, err := codec.Msgpack.Marshal(v)
		require.NoError(t, err)
		return b
	}
	var p point
	err := codec.Msgpack.Unmarshal(enc(struct{ C, D int }{3, 4}), &p) // a map with keys in field order
	require.ErrorIs(t, err, codec.ErrNoFieldsMatched)
	assert.Contains(t, err.Error(), `the map's keys ["C" "D"] name no field of type codec_test.point`)

	for name, tc := range map[string]struct {
		body any
		into any
		want any
	}{
		"one known key beside unknown ones": {map[string]int{"X": 1, "Z": 9}, new(point), &point{X: 1}},
		"a known key with a zero value":     {map[string]int{"Y": 0, "Z": 9}, new(point), &point{}},
		"an empty map":                      {map[string]int{}, new(point), &point{}},
		"a tagged field":                    {map[string]string{"n": ""}, new(tagged), &tagged{}},
		"an embedded struct's field":        {map[string]int{"Depth": 0}, new(tagged), &tagged{}},
		"not a struct":                      {map[string]int{"C": 3}, new(map[string]int), &map[string]int{"C": 3}},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, codec.Msgpack.Unmarshal(enc(tc.body), tc.into))
			assert.Equal(t, tc.want, tc.into)
		})
	}
	assert.False(t, errors.Is(err, codec.ErrMalformed), "a well-formed message of another type is not malformed")
}
