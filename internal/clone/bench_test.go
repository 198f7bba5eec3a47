package clone_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zerodial/transport/internal/clone"
)

// Payload is the benchmarks' non-flat argument: 1 KiB of bytes and 8 entries
// of metadata.
type Payload struct {
	Data []byte
	Meta map[string]string
}

func newPayload() Payload {
	p := Payload{Data: make([]byte, 1024), Meta: make(map[string]string, 8)}
	for i := range p.Data {
		p.Data[i] = byte(i)
	}
	for i := range 8 {
		p.Meta[fmt.Sprintf("key-%d", i)] = fmt.Sprintf("value-%d", i)
	}
	return p
}

func benchCopy[T any](b *testing.B, src T) {
	p, err := clone.For(reflect.TypeFor[T]())
	if err != nil {
		b.Fatal(err)
	}
	sv := reflect.ValueOf(&src).Elem()
	var dst T
	dv := reflect.ValueOf(&dst).Elem()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Copy(dv, sv); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMsgpack[T any](b *testing.B, src T) {
	b.ReportAllocs()
	for b.Loop() {
		data, err := msgpack.Marshal(&src)
		if err != nil {
			b.Fatal(err)
		}
		var dst T
		if err := msgpack.Unmarshal(data, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCopy(b *testing.B) {
	b.Run("flat16", func(b *testing.B) { benchCopy(b, Flat16{1, 2}) })
	b.Run("payload", func(b *testing.B) { benchCopy(b, newPayload()) })
	b.Run("any", func(b *testing.B) {
		benchCopy(b, []any{1, "two", []byte("three"), map[string]any{"four": 4}, &Flat16{5, 5}})
	})
}

func BenchmarkMsgpack(b *testing.B) {
	b.Run("flat16", func(b *testing.B) { benchMsgpack(b, Flat16{1, 2}) })
	b.Run("payload", func(b *testing.B) { benchMsgpack(b, newPayload()) })
	b.Run("any", func(b *testing.B) {
		benchMsgpack(b, []any{1, "two", []byte("three"), map[string]any{"four": 4}, &Flat16{5, 5}})
	})
}
