package codec_test

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
)

// allocBound is the most a rejected body may make Unmarshal allocate. It
// leaves room for the error value and a pooled decoder, and is four orders
// of magnitude below what the hostile bodies below declare.
const allocBound = 64 << 10

// allocated returns the bytes allocated while f runs. Tests that use it do
// not run in parallel, so the figure is f's own.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func be32(b byte, n uint32, tail ...byte) []byte {
	out := binary.BigEndian.AppendUint32([]byte{b}, n)
	return append(out, tail...)
}

// hostile bodies are a few bytes long and declare far more than they hold.
var hostile = []struct {
	name string
	body []byte
	msg  string
}{
	{"2GiB str", be32(0xdb, 1<<31, 'a', 'b', 'c'), "str at byte 0 declares 2147483648 bytes but only 3 remain"},
	{"2GiB bin", be32(0xc6, 1<<31, 1, 2, 3), "bin at byte 0 declares 2147483648 bytes but only 3 remain"},
	{"billion-element array", be32(0xdd, 1e9, 0xc0, 0xc0), "array at byte 0 declares 1000000000 items (at least 1000000000 bytes) but only 2 bytes remain"},
	{"billion-entry map", be32(0xdf, 1e9, 0xa1, 'k', 0xc0), "map at byte 0 declares 1000000000 entries (at least 2000000000 bytes) but only 3 bytes remain"},
	{"2GiB ext", be32(0xc9, 1<<31, 5, 1, 2), "ext at byte 0 declares a type byte and 2147483648 data bytes but only 3 bytes remain"},
	{"2GiB str in an array", append([]byte{0x92, 0x01}, be32(0xdb, 1<<31, 'x')...), "str at byte 2 declares 2147483648 bytes but only 1 remain"},
	{"billion-element array in a map", append([]byte{0x81, 0xa1, 'k'}, be32(0xdd, 1e9, 0xc0)...), "array at byte 3 declares 1000000000 items"},
	{"4Gi-entry map32", be32(0xdf, math32, 0xc0), "map at byte 0 declares 4294967295 entries (at least 8589934590 bytes)"},
}

const math32 = 1<<32 - 1

type hostileTarget struct {
	A string
	B []byte
	C []any
	D map[string]any
	E map[string]string
}

// blob is a byte slice type other than []byte and Raw, so msgpack decodes
// into it rather than the codec passing the body through.
type blob []byte

func targets() map[string]func() any {
	return map[string]func() any{
		"any":            func() any { return new(any) },
		"[]any":          func() any { return new([]any) },
		"map[string]any": func() any { return new(map[string]any) },
		"blob":           func() any { return new(blob) },
		"string":         func() any { return new(string) },
		"struct":         func() any { return new(hostileTarget) },
		"[]struct":       func() any { return new([]hostileTarget) },
	}
}

func TestUnmarshalBoundsDeclaredSizes(t *testing.T) {
	for _, h := range hostile {
		for tname, mk := range targets() {
			t.Run(h.name+"/"+tname, func(t *testing.T) {
				target := mk()
				var err error
				n := allocated(func() { err = codec.Msgpack.Unmarshal(h.body, target) })
				require.ErrorIs(t, err, codec.ErrMalformed)
				assert.Contains(t, err.Error(), h.msg)
				assert.Less(t, n, uint64(allocBound), "allocated %d bytes for a %d-byte body", n, len(h.body))
			})
		}
	}
}

// A *[]byte target is a raw frame: the body is copied, never interpreted, so
// a hostile body costs its own size and no more.
func TestUnmarshalRawIgnoresDeclaredSizes(t *testing.T) {
	for _, h := range hostile {
		var b []byte
		var err error
		n := allocated(func() { err = codec.Msgpack.Unmarshal(h.body, &b) })
		require.NoError(t, err, h.name)
		assert.Equal(t, h.body, b)
		assert.Less(t, n, uint64(allocBound), h.name)
	}
}

func nested(depth int) []byte {
	return append(bytes.Repeat([]byte{0x91}, depth), 0xc0)
}

func TestUnmarshalDepth(t *testing.T) {
	var v any
	require.NoError(t, codec.Msgpack.Unmarshal(nested(codec.MaxDepth), &v), "MaxDepth levels are allowed")
	for range codec.MaxDepth - 1 {
		v = v.([]any)[0]
	}
	assert.Equal(t, []any{nil}, v)

	err := codec.Msgpack.Unmarshal(nested(codec.MaxDepth+1), &v)
	require.ErrorIs(t, err, codec.ErrTooDeep)
	assert.Contains(t, err.Error(), "opens level 10001, more than MaxDepth (10000)")

	// A million levels: rejected without recursion. The walk's stack of
	// open containers takes 8 bytes a level up to MaxDepth: 80 KB.
	deep := nested(1_000_000)
	for tname, mk := range targets() {
		target := mk()
		n := allocated(func() { err = codec.Msgpack.Unmarshal(deep, target) })
		require.ErrorIs(t, err, codec.ErrTooDeep, tname)
		assert.Less(t, n, uint64(8*codec.MaxDepth+allocBound), tname)
	}

	// Maps count as levels too.
	maps := append(bytes.Repeat([]byte{0x81, 0xa0}, codec.MaxDepth+1), 0xc0)
	require.ErrorIs(t, codec.Msgpack.Unmarshal(maps, &v), codec.ErrTooDeep)
}

func TestUnmarshalMalformed(t *testing.T) {
	cases := []struct {
		name string
		body []byte
		msg  string
	}{
		{"empty", nil, "empty body"},
		{"trailing byte", []byte{0x01, 0x02}, "1 trailing byte(s) after the value ending at byte 1"},
		{"two values", []byte{0xa1, 'a', 0xa1, 'b'}, "2 trailing byte(s)"},
		{"truncated array", []byte{0x93, 0x01, 0x02}, "declares 3 items (at least 3 bytes) but only 2 bytes remain"},
		{"truncated nested", []byte{0x92, 0x91, 0x01}, "truncated at byte 3: 1 more item(s) expected"},
		{"truncated inner", []byte{0x91, 0x92, 0x92, 0x01, 0x02}, "truncated at byte 5: 2 more item(s) expected"},
		{"truncated str", []byte{0xa5, 'a', 'b'}, "str at byte 0 declares 5 bytes but only 2 remain"},
		{"truncated uint64", []byte{0xcf, 0, 0, 0}, "truncated uint at byte 0: needs 8 bytes, 3 remain"},
		{"truncated float64", []byte{0x91, 0xcb, 0}, "truncated float64 at byte 1"},
		{"truncated str16 header", []byte{0xda, 0x01}, "truncated str header at byte 0: needs 2 length bytes, 1 remain"},
		{"truncated fixext", []byte{0xd6, 0xff, 0, 0}, "truncated fixext at byte 0"},
		{"reserved byte", []byte{0x91, 0xc1}, "reserved type byte 0xc1 at byte 1"},
		{"map with a key only", []byte{0x81, 0xa0}, "map at byte 0 declares 1 entries (at least 2 bytes) but only 1 bytes remain"},
		{"map missing a value", []byte{0x81, 0xa1, 'k'}, "truncated at byte 3: 1 more item(s) expected"},
	}
	for _, c := range cases {
		var v any
		err := codec.Msgpack.Unmarshal(c.body, &v)
		require.ErrorIs(t, err, codec.ErrMalformed, c.name)
		assert.Contains(t, err.Error(), c.msg, c.name)
	}
}

// Where msgpack expects a map and finds an extension, it reads a map from
// the extension's data and goes on from there, past what was validated. The
// codec stops that read, so a body that is well-formed as a whole cannot
// smuggle a large declaration inside extension data.
func TestUnmarshalExtensionReadAsMap(t *testing.T) {
	bodies := map[string][]byte{
		// fixext8 of type 5 whose data is a map32 header declaring 1e6
		// entries: without the guard, 84 MB for *map[string]any.
		"fixext map32": {0xd7, 0x05, 0xdf, 0x00, 0x0f, 0x42, 0x40, 0xa0, 0xc0, 0xc0},
		// Every map entry declared: make(map, 4e9) without the guard.
		"fixext map32 max": {0xd7, 0x05, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa0, 0xc0, 0xc0},
		// An array of a timestamp whose data starts like a map and three
		// zeros. Read as a map, the timestamp's data is {"": bin32} and the
		// bin's length is 0x80 followed by the zeros: 2 GiB.
		"timestamp then zeros": {0x94, 0xd6, 0xff, 0x81, 0xa0, 0xc6, 0x80, 0x00, 0x00, 0x00},
		// {"M": the fixext above}, for a struct whose field M is a map.
		"ext in a map field": {0x81, 0xa1, 'M', 0xd7, 0x05, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa0, 0xc0, 0xc0},
	}
	guarded := 0
	for name, body := range bodies {
		// Each body is well-formed as a whole.
		if err := codec.Msgpack.Unmarshal(body, new(any)); err != nil {
			require.NotErrorIs(t, err, codec.ErrMalformed, name)
		}
		for _, target := range []any{
			new(map[string]any), new(map[string]string), new(map[string][]byte),
			new([]map[string][]byte), new(struct{ M map[string]any }),
		} {
			var err error
			n := allocated(func() { err = codec.Msgpack.Unmarshal(body, target) })
			require.Error(t, err, "%s into %T", name, target)
			if strings.Contains(err.Error(), "extension data") {
				require.ErrorIs(t, err, codec.ErrMalformed)
				guarded++
			}
			assert.Less(t, n, uint64(allocBound), "%s into %T: allocated %d bytes", name, target, n)
		}
	}
	// The guard stopped every read of extension data as a map: for the two
	// extension bodies, the three map targets; for the array, the slice of
	// maps; for the map, the struct's map field. The other targets fail on
	// their own, msgpack finding an extension where it wants a struct or a
	// string, or a map where it wants an array.
	assert.Equal(t, 2*3+1+1, guarded)
}

// Timestamps are extensions whose data often starts with a map header
// byte; they still decode wherever a time is expected.
func TestUnmarshalTimestampsThatLookLikeMaps(t *testing.T) {
	type withMap struct {
		T time.Time
		M map[string]int
		L []time.Time
	}
	times := []time.Time{
		time.Unix(1700000000, 0x85<<22).UTC(), // timestamp64, data starts 0x85 (fixmap)
		time.Unix(1700000000, 0xdf<<22).UTC(), // data starts 0xdf (map32)
		time.Unix(0xde000000, 0).UTC(),        // timestamp32, data starts 0xde (map16)
		time.Unix(0x80000000, 0).UTC(),        // 2038, data starts 0x80
		time.Unix(1<<40, 0xc0<<22).UTC(),      // timestamp96
	}
	for _, tm := range times {
		in := withMap{T: tm, M: map[string]int{"a": 1}, L: []time.Time{tm, tm}}
		body, err := codec.Msgpack.Marshal(in)
		require.NoError(t, err)

		var out withMap
		require.NoError(t, codec.Msgpack.Unmarshal(body, &out), "%v", tm)
		assert.True(t, tm.Equal(out.T), "%v != %v", tm, out.T)
		assert.Equal(t, in.M, out.M)
		require.Len(t, out.L, 2)
		assert.True(t, tm.Equal(out.L[1]))

		var generic any
		require.NoError(t, codec.Msgpack.Unmarshal(body, &generic))
	}
}
