package codec_test

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/zerodial/transport/codec"
)

// FuzzUnmarshal feeds arbitrary bodies to Unmarshal: it must never panic,
// and whatever it accepts into an interface must survive another encoding.
func FuzzUnmarshal(f *testing.F) {
	for _, v := range []any{
		nil, true, int8(-3), uint64(1) << 63, 3.25, float32(1.5), "str", "",
		[]any{1, "a", []any{nil}}, map[string]any{"k": map[string]any{"n": []any{}}},
		small{1, 2}, sampleRecord(), time.Unix(1700000000, 0x85<<22),
		map[string]string{"a": "b"}, blob{1, 2, 3},
		map[string]any{"Qty": "three", "Items": []any{map[string]any{"N": "x", "Size": 1}}, "Tags": map[string]any{"k": nil}},
		map[int]any{1: []any{map[string]any{"Name": 2}}},
	} {
		b, err := codec.Msgpack.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, h := range hostile {
		f.Add(h.body)
	}
	f.Add(nested(codec.MaxDepth + 1))
	f.Add([]byte{0xd7, 0x05, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa0, 0xc0, 0xc0})
	f.Add([]byte{0x94, 0xd6, 0xff, 0x81, 0xa0, 0xc6, 0x80, 0x00, 0x00, 0x00})
	f.Add([]byte{0x92, 0xc1})
	f.Add([]byte{0x92, 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1, 0x30}) // NaN
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		// Typed targets exercise other decoding paths, and the walk that
		// explains a failure (FieldError), strict or not; only panics and
		// runaway allocation matter there.
		strict := codec.Msgpack.(codec.StrictUnmarshaler)
		for _, target := range []func() any{
			func() any { return new(hostileTarget) }, func() any { return new([]any) },
			func() any { return new(map[string]any) }, func() any { return new(map[string]string) },
			func() any { return new(map[string][]byte) }, func() any { return new([]map[string]any) },
			func() any { return new(time.Time) }, func() any { return new(blob) }, func() any { return new(small) },
			func() any { return new(reserveReq) }, func() any { return new(map[int][]*lineItem) },
		} {
			_ = codec.Msgpack.Unmarshal(data, target())
			_ = strict.UnmarshalStrict(data, target())
		}

		var v any
		if err := codec.Msgpack.Unmarshal(data, &v); err != nil {
			return
		}
		if b, ok := v.([]byte); ok {
			// A bin decoded into an interface is a []byte, which Marshal
			// passes through as a raw frame instead of encoding.
			out, err := codec.Msgpack.Marshal(b)
			if err != nil || !bytes.Equal(out, b) {
				t.Fatalf("raw []byte did not pass through: %v", err)
			}
			return
		}
		enc, err := codec.Msgpack.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %x into %#v but cannot encode it: %v", data, v, err)
		}
		var w any
		if err := codec.Msgpack.Unmarshal(enc, &w); err != nil {
			t.Fatalf("cannot decode own encoding %x of %#v: %v", enc, v, err)
		}
		// NaN is not equal to itself; values holding one are compared by
		// the size of their encodings instead.
		if !hasNaN(v) {
			if !reflect.DeepEqual(v, w) {
				t.Fatalf("round trip changed %#v into %#v", v, w)
			}
			return
		}
		enc2, err := codec.Msgpack.Marshal(w)
		if err != nil || len(enc2) != len(enc) {
			t.Fatalf("round trip of %#v changed its encoding: %v", v, err)
		}
	})
}

// hasNaN reports whether a value decoded into an interface holds a NaN.
func hasNaN(v any) bool {
	switch v := v.(type) {
	case float64:
		return math.IsNaN(v)
	case float32:
		return math.IsNaN(float64(v))
	case []any:
		for _, e := range v {
			if hasNaN(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if hasNaN(e) {
				return true
			}
		}
	}
	return false
}
