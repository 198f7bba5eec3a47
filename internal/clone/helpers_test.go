package clone_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/internal/clone"
)

// checkCopy deep-copies the value mk returns and checks the copy: it is
// DeepEqual to the source, its slices have cap == len, it shares no mutable
// memory with the source (no overlapping pointees, arrays or maps), and
// mutating everything reachable from it leaves the source unchanged
// (compared with a second, pristine value from mk).
func checkCopy(t testing.TB, mk func() any) {
	t.Helper()
	src := reflect.ValueOf(mk())
	pristine := reflect.ValueOf(mk())
	require.True(t, reflect.DeepEqual(src.Interface(), pristine.Interface()), "mk is not deterministic")

	p, err := clone.For(src.Type())
	require.NoError(t, err)
	dst := reflect.New(src.Type()).Elem()
	require.NoError(t, p.Copy(dst, src))
	require.True(t, reflect.DeepEqual(dst.Interface(), src.Interface()),
		"copy differs:\n src %#v\n dst %#v", src.Interface(), dst.Interface())

	var srcMem, dstMem memory
	srcMem.walk(src, 0)
	dstMem.walk(dst, 0)
	for _, c := range dstMem.caps {
		require.Equal(t, c[0], c[1], "copied slice has len %d, cap %d", c[0], c[1])
	}
	if r, ok := dstMem.overlaps(&srcMem); ok {
		t.Fatalf("copy shares memory with the source: %s", r)
	}

	mutate(dst, 0)
	require.True(t, reflect.DeepEqual(src.Interface(), pristine.Interface()),
		"mutating the copy changed the source:\n now %#v\n was %#v", src.Interface(), pristine.Interface())
}

// span is a range of mutable memory reachable from a value.
type span struct {
	lo, hi uintptr
	what   string
}

func (s span) String() string { return fmt.Sprintf("%s [%#x, %#x)", s.what, s.lo, s.hi) }

// memory collects the mutable memory reachable from a value: pointees,
// slice arrays (up to cap) and maps. Strings and values boxed in interfaces
// are immutable and left out, as are the types clone deems immutable.
type memory struct {
	spans []span
	caps  [][2]int // len, cap of every non-nil slice
	seen  map[span]bool
}

func (m *memory) add(s span) bool {
	if m.seen == nil {
		m.seen = make(map[span]bool)
	}
	if m.seen[s] {
		return false
	}
	m.seen[s] = true
	m.spans = append(m.spans, s)
	return true
}

func (m *memory) walk(v reflect.Value, depth int) {
	if depth > 1000 {
		panic("memory.walk: too deep")
	}
	if v.Type() == reflect.TypeFor[time.Time]() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		size := v.Type().Elem().Size()
		if size > 0 && !m.add(span{uintptr(v.UnsafePointer()), uintptr(v.UnsafePointer()) + size, "pointee " + v.Type().String()}) {
			return
		}
		m.walk(v.Elem(), depth+1)
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		m.caps = append(m.caps, [2]int{v.Len(), v.Cap()})
		size := v.Type().Elem().Size()
		if v.Cap() > 0 && size > 0 {
			lo := uintptr(v.UnsafePointer())
			m.add(span{lo, lo + uintptr(v.Cap())*size, "array of " + v.Type().String()})
		}
		for i := range v.Len() {
			m.walk(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		lo := uintptr(v.UnsafePointer())
		if !m.add(span{lo, lo + 1, "map " + v.Type().String()}) {
			return
		}
		it := v.MapRange()
		for it.Next() {
			m.walk(it.Key(), depth+1)
			m.walk(it.Value(), depth+1)
		}
	case reflect.Interface:
		if !v.IsNil() {
			m.walk(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			m.walk(v.Field(i), depth+1)
		}
	case reflect.Array:
		for i := range v.Len() {
			m.walk(v.Index(i), depth+1)
		}
	}
}

// overlaps reports a span of m that overlaps one of o.
func (m *memory) overlaps(o *memory) (string, bool) {
	for _, a := range m.spans {
		for _, b := range o.spans {
			if a.lo < b.hi && b.lo < a.hi {
				return fmt.Sprintf("copy's %s overlaps source's %s", a, b), true
			}
		}
	}
	return "", false
}

// mutate changes every settable scalar, slice element, map entry, pointee and
// interface value reachable from v (settable), and adds an entry to maps with
// string or integer keys.
func mutate(v reflect.Value, depth int) {
	if depth > 1000 {
		panic("mutate: too deep")
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Complex64, reflect.Complex128:
		v.SetComplex(v.Complex() + 1)
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Array, reflect.Slice:
		for i := range v.Len() {
			mutate(v.Index(i), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				mutate(f, depth+1)
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			mutate(v.Elem(), depth+1)
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := reflect.New(v.Elem().Type()).Elem()
		e.Set(v.Elem())
		mutate(e, depth+1)
		v.Set(e)
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			mutate(e, depth+1)
			v.SetMapIndex(k, e)
		}
		k := reflect.New(v.Type().Key()).Elem()
		switch k.Kind() {
		case reflect.String:
			for k.SetString("~"); v.MapIndex(k).IsValid(); k.SetString(k.String() + "~") {
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			for ; v.MapIndex(k).IsValid(); k.SetInt(k.Int() + 1) {
			}
		default:
			return
		}
		v.SetMapIndex(k, reflect.Zero(v.Type().Elem()))
	}
}
