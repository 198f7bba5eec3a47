package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/zerodial/transport/codec"
)

type small struct{ A, B int }

type record struct {
	Name  string
	Data  []byte
	Tags  map[string]string
	List  []any
	When  time.Time
	Ratio float64
	Inner *small
}

func sampleRecord() record {
	return record{
		Name:  "zerodial",
		Data:  []byte{0, 1, 2, 0xff},
		Tags:  map[string]string{"a": "1", "b": "2"},
		List:  []any{int8(1), "two", 3.5, nil, true},
		When:  time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC),
		Ratio: math.Pi,
		Inner: &small{A: -7, B: 1 << 40},
	}
}

func TestMsgpackName(t *testing.T) {
	assert.Equal(t, "msgpack", codec.Msgpack.Name())
	assert.Equal(t, codec.Msgpack, codec.Default)
	_, ok := codec.Msgpack.(codec.Appender)
	assert.True(t, ok, "Msgpack implements Appender")
}

func TestMsgpackRoundTrip(t *testing.T) {
	in := sampleRecord()
	b, err := codec.Msgpack.Marshal(in)
	require.NoError(t, err)

	var out record
	require.NoError(t, codec.Msgpack.Unmarshal(b, &out))
	assert.True(t, in.When.Equal(out.When), "time %v != %v", in.When, out.When)
	out.When = in.When
	assert.Equal(t, in, out)
}

// The encoding is msgpack.Marshal's, so other users of the library read it.
func TestMsgpackMatchesLibrary(t *testing.T) {
	for _, v := range []any{sampleRecord(), small{1, 2}, map[string]any{"k": int64(1) << 50}, "s", int16(3)} {
		want, err := msgpack.Marshal(v)
		require.NoError(t, err)
		got, err := codec.Msgpack.Marshal(v)
		require.NoError(t, err)
		if _, isRecord := v.(record); isRecord {
			// Map key order is random; compare by decoding.
			var a, b record
			require.NoError(t, msgpack.Unmarshal(want, &a))
			require.NoError(t, msgpack.Unmarshal(got, &b))
			assert.Equal(t, a, b)
			continue
		}
		assert.Equal(t, want, got, "%T", v)
	}
}

func TestAppendMarshalAppends(t *testing.T) {
	a := codec.Msgpack.(codec.Appender)
	prefix := []byte("prefix")
	out, err := a.AppendMarshal(prefix, small{1, 2})
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(out, prefix))
	want, err := codec.Msgpack.Marshal(small{1, 2})
	require.NoError(t, err)
	assert.Equal(t, want, out[len(prefix):])
}

func TestMarshalError(t *testing.T) {
	for _, v := range []any{make(chan int), func() {}, map[string]any{"f": func() {}}} {
		_, err := codec.Msgpack.Marshal(v)
		require.Error(t, err, "%T", v)
		assert.Contains(t, err.Error(), fmt.Sprintf("cannot marshal %T", v))

		dst := []byte("keep")
		out, err := codec.Msgpack.(codec.Appender).AppendMarshal(dst, v)
		require.Error(t, err)
		assert.Equal(t, []byte("keep"), out, "AppendMarshal returns dst unchanged on error")
	}
}

func TestUnmarshalNilTargets(t *testing.T) {
	body, err := codec.Msgpack.Marshal(small{1, 2})
	require.NoError(t, err)
	for _, target := range []any{nil, (*small)(nil), (*any)(nil), (*[]byte)(nil), (*codec.Raw)(nil), (*map[string]any)(nil)} {
		err := codec.Msgpack.Unmarshal(body, target)
		assert.ErrorIs(t, err, codec.ErrNilPointer, "%T", target)
	}
	var s small
	assert.Error(t, codec.Msgpack.Unmarshal(body, s), "non-pointer target")
}

// Unmarshal must not keep a reference to the body: the caller reuses it.
func TestUnmarshalDoesNotAlias(t *testing.T) {
	in := sampleRecord()
	in.Name = strings.Repeat("n", 100)
	in.Data = bytes.Repeat([]byte{7}, 100)
	body, err := codec.Msgpack.Marshal(in)
	require.NoError(t, err)

	var rec record
	var gen any
	var m map[string]any
	require.NoError(t, codec.Msgpack.Unmarshal(body, &rec))
	require.NoError(t, codec.Msgpack.Unmarshal(body, &gen))
	require.NoError(t, codec.Msgpack.Unmarshal(body, &m))
	before := fmt.Sprint(rec, gen, m)

	for i := range body {
		body[i] = 0xc1
	}
	assert.Equal(t, before, fmt.Sprint(rec, gen, m), "decoded values changed with the body")
}

func TestUnmarshalErrorsAreWrapped(t *testing.T) {
	body, err := codec.Msgpack.Marshal("not a number")
	require.NoError(t, err)
	var n int
	err = codec.Msgpack.Unmarshal(body, &n)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot unmarshal into *int")
}

// Pooled encoders and decoders must not carry state from one use to the
// next, whatever the previous use was.
func TestPoolReuse(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				var v any
				switch (g + i) % 3 {
				case 0:
					v = small{i, -i}
				case 1:
					v = map[string]any{"i": int64(i), "s": "v"}
				default:
					v = big
				}
				b, err := codec.Msgpack.Marshal(v)
				if !assert.NoError(t, err) {
					return
				}
				want, err := msgpack.Marshal(v)
				if !assert.NoError(t, err) {
					return
				}
				if _, isMap := v.(map[string]any); !isMap {
					assert.Equal(t, want, b)
				}
				var back any
				if !assert.NoError(t, codec.Msgpack.Unmarshal(b, &back)) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{codec.ErrMalformed, codec.ErrTooDeep, codec.ErrNilPointer, codec.ErrContentType, codec.ErrMalformedHeader, codec.ErrNoFieldsMatched}
	for i, a := range errs {
		for j, b := range errs {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}
