package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
)

// AppendMarshal into a buffer with room allocates nothing: msgpack encodes a
// struct through cached per-type encoders and writes through the pooled
// encoder's own writer.
func TestAppendMarshalAllocs(t *testing.T) {
	skipUnderRace(t)
	a := codec.Msgpack.(codec.Appender)
	buf := make([]byte, 0, 64)
	// The values are boxed once, outside the measurement: converting a
	// struct to an interface allocates in the caller, not in the codec.
	for _, v := range []any{&small{A: 1, B: 1 << 40}, small{A: -1, B: 2}} {
		allocs := testing.AllocsPerRun(1000, func() {
			var err error
			buf, err = a.AppendMarshal(buf[:0], v)
			if err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, "%T", v)
	}

	var frame any = codec.Raw("raw body")
	allocs := testing.AllocsPerRun(1000, func() {
		buf, _ = a.AppendMarshal(buf[:0], frame)
	})
	require.Zero(t, allocs)
}

// Marshal allocates once: the result, copied out of the pooled buffer.
func TestMarshalAllocs(t *testing.T) {
	skipUnderRace(t)
	var v any = &small{A: 1, B: 2}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := codec.Msgpack.Marshal(v); err != nil {
			t.Fatal(err)
		}
	})
	require.Equal(t, 1.0, allocs)
}

// Unmarshal of a small struct allocates nothing: validation walks the body
// with a stack array, and the pooled decoder reads field names into its own
// buffer.
func TestUnmarshalAllocs(t *testing.T) {
	skipUnderRace(t)
	body, err := codec.Msgpack.Marshal(small{A: 1, B: 2})
	require.NoError(t, err)
	var out small
	allocs := testing.AllocsPerRun(1000, func() {
		if err := codec.Msgpack.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)

	buf := make([]byte, 0, 64)
	allocs = testing.AllocsPerRun(1000, func() {
		_ = codec.Msgpack.Unmarshal(body, &buf)
	})
	require.Zero(t, allocs)
}

func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts are not exact under the race detector")
	}
}

func BenchmarkMarshal(b *testing.B) {
	var v any = &small{A: 1, B: 2}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.Msgpack.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMarshal(b *testing.B) {
	a := codec.Msgpack.(codec.Appender)
	var v any = &small{A: 1, B: 2}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = a.AppendMarshal(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	body, err := codec.Msgpack.Marshal(small{A: 1, B: 2})
	if err != nil {
		b.Fatal(err)
	}
	var out small
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := codec.Msgpack.Unmarshal(body, &out); err != nil {
			b.Fatal(err)
		}
	}
}
