package clone_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/internal/clone"
)

type Flat16 struct{ A, B int64 }

type flatUnexported struct {
	a int
	b string
	C float64
	d [2]bool
}

type Inner struct {
	S string
	N []int
	M map[string]int
}

type WithPtr struct {
	P  *Inner
	PP **int
	F  *Flat16
}

type Embedded struct {
	Inner
	*Flat16
	X int
}

type WithTime struct {
	T  time.Time
	TP *time.Time
	Ts []time.Time
	M  map[time.Time]string
}

type Node struct {
	V    int
	Next *Node
}

type Tree struct {
	Name  string
	Kids  []*Tree
	Attrs map[string]any
}

type Holder struct {
	A   any
	Err error
	S   fmt.Stringer
}

type mixed struct {
	a int
	b string
	B []byte
}

type Arrays struct {
	A [3][]int
	B [2]Flat16
	C [2]*Flat16
	D [0]func()
}

type Rec struct {
	M map[string]Rec
	S []Rec
	P *Rec
}

type Meta map[string]string

type SelfSlice []SelfSlice

type SelfMap map[string]SelfMap

type Req struct {
	ID int
	Ch chan int
}

type BadUnexported struct {
	ID  int
	buf []byte
}

type Fn struct{ F func() }

type Outer struct{ Items []struct{ Ch chan int } }

type hiddenInner struct{ X []int }

type HiddenEmbed struct{ hiddenInner }

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

type ptrStringer struct{ S []string }

func (s *ptrStringer) String() string { return strings.Join(s.S, ",") }

var zoneX = time.FixedZone("X", 3600)

func intp(i int) *int { return &i }

// copyCases are values Copy must copy; each func returns a fresh value.
var copyCases = []struct {
	name string
	mk   func() any
}{
	{"int", func() any { return 42 }},
	{"string", func() any { return "hello" }},
	{"complex", func() any { return complex(1, 2) }},
	{"uintptr", func() any { return uintptr(7) }},
	{"flat16", func() any { return Flat16{1, 2} }},
	{"flat unexported", func() any { return flatUnexported{1, "x", 2.5, [2]bool{true, false}} }},
	{"array flat", func() any { return [4]int{1, 2, 3, 4} }},
	{"nil pointer", func() any { return (*Inner)(nil) }},
	{"pointer to int", func() any { return intp(3) }},
	{"pointer to pointer", func() any { p := intp(5); return &p }},
	{"nested pointers", func() any {
		pp := intp(9)
		return WithPtr{P: &Inner{S: "s", N: []int{1, 2}, M: map[string]int{"a": 1}}, PP: &pp, F: &Flat16{3, 4}}
	}},
	{"nil []byte", func() any { return []byte(nil) }},
	{"empty []byte", func() any { return []byte{} }},
	{"empty []byte with cap", func() any { return make([]byte, 0, 16) }},
	{"[]byte", func() any { return []byte("hello, world") }},
	{"[]byte cap > len", func() any { b := make([]byte, 3, 64); copy(b, "abc"); return b }},
	{"[]string", func() any { return []string{"a", "b"} }},
	{"[]*int", func() any { return []*int{intp(1), nil, intp(3)} }},
	{"slice of structs with maps", func() any {
		return []Inner{
			{S: "a", N: []int{1}, M: map[string]int{"x": 1, "y": 2}},
			{S: "b", N: nil, M: nil},
			{S: "c", N: []int{}, M: map[string]int{}},
		}
	}},
	{"nil map", func() any { return map[string]int(nil) }},
	{"empty map", func() any { return map[string]int{} }},
	{"map[string]string", func() any { return map[string]string{"a": "b", "c": ""} }},
	{"named flat map", func() any { return Meta{"a": "b", "c": ""} }},
	{"flat maps in struct", func() any {
		return struct {
			A, B, C map[string]string
			D       Meta
			E       map[int64]string
		}{A: map[string]string{"k": "v"}, C: map[string]string{}, D: Meta{}, E: map[int64]string{1: "x"}}
	}},
	{"map of slices", func() any { return map[string][]int{"a": {1, 2}, "b": nil, "c": {}} }},
	{"map of structs", func() any {
		return map[int]Inner{1: {S: "one", N: []int{1}}, 2: {M: map[string]int{"k": 2}}}
	}},
	{"map of pointers", func() any { return map[string]*Flat16{"a": {1, 2}, "nil": nil} }},
	{"map struct key", func() any { return map[Flat16][]string{{1, 2}: {"x"}} }},
	{"nested maps", func() any {
		return map[string]map[string][]byte{"a": {"b": []byte("c")}, "n": nil}
	}},
	{"arrays", func() any {
		return Arrays{A: [3][]int{{1}, nil, {}}, B: [2]Flat16{{1, 2}, {3, 4}}, C: [2]*Flat16{{5, 6}, nil}}
	}},
	{"pointer to array", func() any { return &[2][]string{{"a"}, {"b", "c"}} }},
	{"time", func() any {
		t := time.Date(2024, 5, 6, 7, 8, 9, 10, zoneX)
		return WithTime{T: t, TP: &t, Ts: []time.Time{t, {}}, M: map[time.Time]string{t: "t"}}
	}},
	{"embedded", func() any {
		return Embedded{Inner: Inner{S: "e", N: []int{7}, M: map[string]int{"m": 1}}, Flat16: &Flat16{1, 1}, X: 3}
	}},
	{"mixed unexported flat", func() any { return mixed{a: 1, b: "x", B: []byte("data")} }},
	{"linked list", func() any {
		var head *Node
		for i := range 100 {
			head = &Node{V: i, Next: head}
		}
		return head
	}},
	{"tree", func() any {
		return &Tree{Name: "root", Kids: []*Tree{
			{Name: "a", Attrs: map[string]any{"n": 1, "s": []string{"x"}}},
			{Name: "b", Kids: []*Tree{{Name: "c"}}, Attrs: map[string]any{}},
		}}
	}},
	{"recursive type", func() any {
		return Rec{M: map[string]Rec{"a": {S: []Rec{{}}}}, S: []Rec{{P: &Rec{}}}, P: &Rec{M: map[string]Rec{}}}
	}},
	{"self slice", func() any { return SelfSlice{{}, {{}, nil}, nil} }},
	{"self map", func() any { return SelfMap{"a": {"b": {}}, "c": nil} }},
	{"interfaces", func() any {
		return Holder{A: []byte("in any"), Err: errors.New("boom"), S: stringer{"s"}}
	}},
	{"interface holding flat", func() any { return Holder{A: Flat16{1, 2}, S: stringer{"x"}} }},
	{"interface holding pointer", func() any { return Holder{A: &Inner{N: []int{1}}, S: &ptrStringer{S: []string{"p"}}} }},
	{"interface holding typed nil", func() any { return Holder{A: (*Inner)(nil), S: (*ptrStringer)(nil)} }},
	{"interface holding map", func() any { return Holder{A: map[string][]int{"a": {1}}} }},
	{"interface holding struct", func() any { return Holder{A: Inner{S: "x", N: []int{1, 2}}} }},
	{"interface holding array", func() any { return Holder{A: [2][]int{{1}, {2}}} }},
	{"interface holding unexported type", func() any { return Holder{A: hiddenInner{X: []int{1, 2}}} }},
	{"nil interfaces", func() any { return Holder{} }},
	{"[]any", func() any {
		return []any{nil, 1, "two", []any{3.0, []byte("four")}, map[string]any{"five": []int{5}}, &Flat16{6, 6}}
	}},
	{"map[string]any", func() any {
		return map[string]any{"a": []string{"x"}, "b": map[string]any{"c": intp(1)}, "n": nil}
	}},
	{"empty struct", func() any { return struct{}{} }},
	{"anonymous struct", func() any {
		return struct {
			A []int
			b int
		}{A: []int{1}, b: 2}
	}},
}

func TestCopy(t *testing.T) {
	for _, tc := range copyCases {
		t.Run(tc.name, func(t *testing.T) { checkCopy(t, tc.mk) })
	}
}

func TestCopyNilAndEmptyPreserved(t *testing.T) {
	type S struct {
		NilB, EmptyB []byte
		NilM, EmptyM map[string]int
		NilP         *int
		NilI         any
	}
	src := S{EmptyB: make([]byte, 0, 8), EmptyM: map[string]int{}}
	var dst S
	copyInto(t, &dst, src)
	assert.Nil(t, dst.NilB)
	assert.NotNil(t, dst.EmptyB)
	assert.Empty(t, dst.EmptyB)
	assert.Zero(t, cap(dst.EmptyB))
	assert.Nil(t, dst.NilM)
	assert.NotNil(t, dst.EmptyM)
	assert.Nil(t, dst.NilP)
	assert.Nil(t, dst.NilI)
}

// copyInto copies src into *dst with clone, failing the test on error.
func copyInto[T any](t testing.TB, dst *T, src T) {
	t.Helper()
	p, err := clone.For(reflect.TypeFor[T]())
	require.NoError(t, err)
	require.NoError(t, p.Copy(reflect.ValueOf(dst).Elem(), reflect.ValueOf(&src).Elem()))
}

func TestCopySharingNotPreserved(t *testing.T) {
	type Two struct{ A, B *Flat16 }
	f := &Flat16{1, 2}
	var dst Two
	copyInto(t, &dst, Two{A: f, B: f})
	assert.Equal(t, *f, *dst.A)
	assert.Equal(t, *f, *dst.B)
	assert.NotSame(t, dst.A, dst.B)
	assert.NotSame(t, f, dst.A)
}

func TestCopyOverwritesDst(t *testing.T) {
	// A reused dst must be overwritten, and its previous contents (which
	// an earlier copy may have handed out) left alone.
	type S struct {
		B []byte
		M map[string][]int
		A any
		P *Inner
	}
	var dst S
	copyInto(t, &dst, S{B: []byte("first"), M: map[string][]int{"a": {1}}, A: []int{1}, P: &Inner{S: "1"}})
	first := dst
	copyInto(t, &dst, S{B: []byte("2nd"), M: map[string][]int{"b": {2}}, A: []int{2}, P: &Inner{S: "2"}})
	assert.Equal(t, S{B: []byte("first"), M: map[string][]int{"a": {1}}, A: []int{1}, P: &Inner{S: "1"}}, first)
	assert.Equal(t, S{B: []byte("2nd"), M: map[string][]int{"b": {2}}, A: []int{2}, P: &Inner{S: "2"}}, dst)
	copyInto(t, &dst, S{})
	assert.Equal(t, S{}, dst)
}

func TestFlat(t *testing.T) {
	cases := []struct {
		typ  reflect.Type
		flat bool
	}{
		{reflect.TypeFor[int](), true},
		{reflect.TypeFor[bool](), true},
		{reflect.TypeFor[complex128](), true},
		{reflect.TypeFor[uintptr](), true},
		{reflect.TypeFor[string](), true},
		{reflect.TypeFor[Flat16](), true},
		{reflect.TypeFor[[4]int](), true},
		{reflect.TypeFor[[2]Flat16](), true},
		{reflect.TypeFor[flatUnexported](), true},
		{reflect.TypeFor[time.Time](), true},
		{reflect.TypeFor[struct {
			T time.Time
			n int
		}](), true},
		{reflect.TypeFor[sync.Mutex](), true},
		{reflect.TypeFor[[0]func()](), true},
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[*int](), false},
		{reflect.TypeFor[*time.Time](), false},
		{reflect.TypeFor[[]byte](), false},
		{reflect.TypeFor[map[string]int](), false},
		{reflect.TypeFor[any](), false},
		{reflect.TypeFor[error](), false},
		{reflect.TypeFor[Inner](), false},
		{reflect.TypeFor[mixed](), false},
		{reflect.TypeFor[[2][]int](), false},
		{reflect.TypeFor[Node](), false},
		{reflect.TypeFor[Rec](), false},
		{reflect.TypeFor[SelfSlice](), false},
	}
	for _, tc := range cases {
		t.Run(tc.typ.String(), func(t *testing.T) {
			p, err := clone.For(tc.typ)
			require.NoError(t, err)
			assert.Equal(t, tc.flat, p.Flat())
		})
	}
}

func TestForCaches(t *testing.T) {
	p1, err := clone.For(reflect.TypeFor[Tree]())
	require.NoError(t, err)
	p2, err := clone.For(reflect.TypeFor[Tree]())
	require.NoError(t, err)
	assert.Same(t, p1, p2)
	_, err1 := clone.For(reflect.TypeFor[Req]())
	_, err2 := clone.For(reflect.TypeFor[Req]())
	assert.Same(t, err1, err2)
}

func TestForErrors(t *testing.T) {
	cases := []struct {
		typ reflect.Type
		err string
	}{
		{reflect.TypeFor[chan int](), "clone: chan int: chan int cannot be copied"},
		{reflect.TypeFor[func()](), "clone: func(): func() cannot be copied"},
		{reflect.TypeFor[unsafe.Pointer](), "clone: unsafe.Pointer: unsafe.Pointer cannot be copied"},
		{reflect.TypeFor[Req](), "clone: clone_test.Req.Ch: chan int cannot be copied"},
		{reflect.TypeFor[*Req](), "clone: *clone_test.Req.Ch: chan int cannot be copied"},
		{reflect.TypeFor[[]Req](), "clone: []clone_test.Req[].Ch: chan int cannot be copied"},
		{reflect.TypeFor[map[string][2]Req](), "clone: map[string][2]clone_test.Req[][].Ch: chan int cannot be copied"},
		{reflect.TypeFor[Outer](), "clone: clone_test.Outer.Items[].Ch: chan int cannot be copied"},
		{reflect.TypeFor[Fn](), "clone: clone_test.Fn.F: func() cannot be copied"},
		{reflect.TypeOf(BadUnexported{buf: []byte("x")}), "clone: clone_test.BadUnexported.buf: unexported field of non-flat type []uint8 cannot be copied"},
		{reflect.TypeFor[HiddenEmbed](), "clone: clone_test.HiddenEmbed.hiddenInner: unexported field of non-flat type clone_test.hiddenInner cannot be copied"},
		{reflect.TypeFor[bytes.Buffer](), "clone: bytes.Buffer.buf: unexported field of non-flat type []uint8 cannot be copied"},
		{reflect.TypeFor[struct{ L *time.Location }](), "clone: struct { L *time.Location }.L.zone: unexported field of non-flat type []time.zone cannot be copied"},
		{reflect.TypeFor[map[*int]int](), "clone: map[*int]int: map[*int]int cannot be copied: key type *int is not flat"},
		{reflect.TypeFor[map[any]int](), "clone: map[interface {}]int: map[interface {}]int cannot be copied: key type interface {} is not flat"},
		{reflect.TypeFor[struct{ M map[chan int]int }](), "clone: struct { M map[chan int]int }.M: map[chan int]int cannot be copied: key type chan int is not flat"},
	}
	for _, tc := range cases {
		t.Run(tc.typ.String(), func(t *testing.T) {
			p, err := clone.For(tc.typ)
			assert.Nil(t, p)
			require.EqualError(t, err, tc.err)
		})
	}
	_, err := clone.For(nil)
	require.EqualError(t, err, "clone: nil type")
}

func TestCopyErrors(t *testing.T) {
	cycle := &Node{V: 1}
	cycle.Next = &Node{V: 2, Next: cycle}
	selfSlice := SelfSlice{nil}
	selfSlice[0] = selfSlice
	selfAny := []any{nil}
	selfAny[0] = selfAny
	deep := "nesting deeper than clone.MaxDepth (10000); a pointer cycle?"

	cases := []struct {
		name string
		src  any
		err  string
	}{
		{"chan in interface", Holder{A: make(chan int)}, "clone: clone_test.Holder.A.(chan int): chan int cannot be copied"},
		{"func in interface", Holder{A: func() {}}, "clone: clone_test.Holder.A.(func()): func() cannot be copied"},
		{"uncopyable struct in interface", Holder{A: Req{}}, "clone: clone_test.Holder.A.(clone_test.Req).Ch: chan int cannot be copied"},
		{"nested", []any{1, map[string]any{"k": &Req{}}}, "clone: []interface {}[].(map[string]interface {})[].(*clone_test.Req).Ch: chan int cannot be copied"},
		{"buffer in interface", map[string]any{"b": &bytes.Buffer{}}, "clone: map[string]interface {}[].(*bytes.Buffer).buf: unexported field of non-flat type []uint8 cannot be copied"},
		{"pointer cycle", cycle, "clone: *clone_test.Node: " + deep},
		{"slice cycle", selfSlice, "clone: clone_test.SelfSlice: " + deep},
		{"interface cycle", selfAny, "clone: []interface {}: " + deep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := reflect.ValueOf(tc.src)
			p, err := clone.For(src.Type())
			require.NoError(t, err)
			err = p.Copy(reflect.New(src.Type()).Elem(), src)
			require.EqualError(t, err, tc.err)
			// Again, now that the dynamic types' errors are cached.
			err = p.Copy(reflect.New(src.Type()).Elem(), src)
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestMaxDepth(t *testing.T) {
	list := func(n int) *Node {
		var head *Node
		for i := range n {
			head = &Node{V: i, Next: head}
		}
		return head
	}
	p, err := clone.For(reflect.TypeFor[*Node]())
	require.NoError(t, err)

	var dst *Node
	require.NoError(t, p.Copy(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(list(clone.MaxDepth))))
	n := 0
	for q := dst; q != nil; q = q.Next {
		n++
	}
	assert.Equal(t, clone.MaxDepth, n)

	err = p.Copy(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(list(clone.MaxDepth+1)))
	require.ErrorContains(t, err, "MaxDepth")
}

func TestCopyPanicsOnMisuse(t *testing.T) {
	p, err := clone.For(reflect.TypeFor[Inner]())
	require.NoError(t, err)
	src := reflect.ValueOf(Inner{})
	assert.PanicsWithValue(t, "clone: Copy: dst is not settable", func() { _ = p.Copy(reflect.ValueOf(Inner{}), src) })
	assert.Panics(t, func() { _ = p.Copy(reflect.New(reflect.TypeFor[Flat16]()).Elem(), src) })
	assert.Panics(t, func() { _ = p.Copy(reflect.New(src.Type()).Elem(), reflect.ValueOf(Flat16{})) })
}

func TestConcurrent(t *testing.T) {
	// Plans built and used from many goroutines at once, including the
	// dynamic types met at Copy time; run with -race.
	type C1 struct {
		A []any
		T *Tree
	}
	type C2 struct{ M map[string]C1 }
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				src := C2{M: map[string]C1{"x": {A: []any{i, &Flat16{1, 2}, []C1{{}}, map[int]string{j: "j"}}, T: &Tree{Name: "t"}}}}
				var dst C2
				copyInto(t, &dst, src)
				if !reflect.DeepEqual(src, dst) {
					t.Errorf("copy differs")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCopyAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under coverage and race")
	}
	type Payload struct {
		Data []byte
		Meta map[string]string
	}
	check := func(name string, src any, max float64) {
		t.Helper()
		sv := reflect.ValueOf(src)
		p, err := clone.For(sv.Type())
		require.NoError(t, err)
		dst := reflect.New(sv.Type()).Elem()
		allocs := testing.AllocsPerRun(100, func() { _ = p.Copy(dst, sv) })
		assert.LessOrEqual(t, allocs, max, name)
	}
	check("flat", Flat16{1, 2}, 0)
	check("[]byte", []byte("0123456789"), 1)
	check("*Flat16", &Flat16{}, 1)
	check("interface holding flat", Holder{A: Flat16{}}, 0)
	check("payload", Payload{Data: make([]byte, 1024), Meta: map[string]string{"a": "b"}}, 3)
}
