package codec

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// explain turns the decoder's failure to decode data into v into a
// *FieldError that names the place, by walking data, which validate has
// passed, against v's type: the first field, element or map value whose
// encoding its Go type does not take. It runs only on the failure path, so
// the success path's speed and allocations are msgpack's own. It reads
// nothing but data and allocates in proportion to it (each value is
// visited once, and a leaf is decoded on its own through the same guarded
// decoder as the whole); when it finds no such place (a custom decoder's
// own failure, say), the decoder's error is returned with the target's
// type.
func explain(data []byte, v any, strict bool, cause error) error {
	x := explainer{data: data, strict: strict}
	if _, fe := x.walk(0, reflect.TypeOf(v).Elem()); fe != nil {
		fe.Into = fmt.Sprintf("%T", v)
		if fe.Err == nil {
			fe.Err = cause
		}
		return fe
	}
	return fmt.Errorf("codec: cannot unmarshal into %T: %w", v, cause)
}

type explainer struct {
	data   []byte
	strict bool
	// path is where the walk is, a step a level, spelled out only for an
	// error: a path built as a string at every level would allocate as
	// the square of the depth.
	path []step
	// fields holds structFields' answers, made once a type.
	fields map[reflect.Type]map[string]reflect.Type
}

// step is one level of a path: a struct's field (the string key at
// data[key:]), an element's index, or a map's value (its key at
// data[key:end]).
type step struct {
	kind     byte // '.', '[' or 'k'
	index    int
	key, end int
}

// pathText spells out the walk's path: "Items[2].Qty", `Tags["k"]`.
func (x *explainer) pathText() string {
	var b strings.Builder
	for i, s := range x.path {
		switch s.kind {
		case '.':
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(x.str(s.key))
		case '[':
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case 'k':
			b.WriteString("[" + x.keyText(s.key, s.end) + "]")
		}
	}
	return b.String()
}

// at returns e with the walk's path, for returning up the walk.
func (x *explainer) at(e *FieldError) *FieldError {
	e.Field = x.pathText()
	return e
}

var (
	typeOfCustomDecoder     = reflect.TypeFor[msgpack.CustomDecoder]()
	typeOfUnmarshaler       = reflect.TypeFor[msgpack.Unmarshaler]()
	typeOfBinaryUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	typeOfTextUnmarshaler   = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// opaque reports whether t decodes by rules of its own (an interface, a
// custom decoder, time.Time), which the walk judges only as a whole.
func opaque(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	for _, i := range []reflect.Type{typeOfCustomDecoder, typeOfUnmarshaler, typeOfBinaryUnmarshaler, typeOfTextUnmarshaler} {
		if t.Implements(i) || pt.Implements(i) {
			return true
		}
	}
	return false
}

// walk checks the value at data[pos:] against t and returns where it ends,
// or the first place it does not fit. A container that fits its type's
// kind is walked item by item, so that each byte is read once; a leaf, an
// opaque type or a container of another kind than t's is decoded on its
// own, as the whole was.
func (x *explainer) walk(pos int, t reflect.Type) (int, *FieldError) {
	c := x.data[pos]
	if c == 0xc0 { // nil fits any type: the zero value
		return pos + 1, nil
	}
	for t.Kind() == reflect.Pointer && !opaque(t) {
		t = t.Elem()
	}
	if !opaque(t) {
		switch {
		case t.Kind() == reflect.Struct && isMap(c):
			return x.walkStruct(pos, t)
		case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 && isArray(c):
			n, p := x.count(pos)
			x.path = append(x.path, step{kind: '['})
			for i := range n {
				x.path[len(x.path)-1].index = i
				var fe *FieldError
				if p, fe = x.walk(p, t.Elem()); fe != nil {
					return p, fe
				}
			}
			x.path = x.path[:len(x.path)-1]
			return p, nil
		case t.Kind() == reflect.Map && isMap(c):
			n, p := x.count(pos)
			for range n {
				key := p
				var fe *FieldError
				if p, fe = x.walk(p, t.Key()); fe != nil {
					fe.Got = "a map key " + fe.Got
					return p, fe
				}
				x.path = append(x.path, step{kind: 'k', key: key, end: p})
				if p, fe = x.walk(p, t.Elem()); fe != nil {
					return p, fe
				}
				x.path = x.path[:len(x.path)-1]
			}
			return p, nil
		}
	}
	end := x.end(pos)
	if err := decode(x.data[pos:end], reflect.New(t).Interface(), x.strict); err != nil {
		return end, x.at(&FieldError{Got: x.got(pos, end), Want: t.String(), Err: err})
	}
	return end, nil
}

// walkStruct checks the map at data[pos:] against the struct type t.
func (x *explainer) walkStruct(pos int, t reflect.Type) (int, *FieldError) {
	fields, ok := x.fields[t]
	if !ok {
		fields = structFields(t)
		if x.fields == nil {
			x.fields = map[reflect.Type]map[string]reflect.Type{}
		}
		x.fields[t] = fields
	}
	n, p := x.count(pos)
	for range n {
		key := p
		p = x.end(key)
		if !isString(x.data[key]) {
			return p, x.at(&FieldError{Got: "a map key " + x.got(key, p), Want: t.String()})
		}
		f, ok := fields[x.str(key)]
		x.path = append(x.path, step{kind: '.', key: key})
		if !ok {
			if x.strict && !x.knows(t, key, p) {
				return p, x.at(&FieldError{Want: t.String(), Unknown: true, Err: ErrUnknownField})
			}
			// Ignored, or a field this walk does not name: msgpack's
			// own rules let it by.
			p = x.end(p)
			x.path = x.path[:len(x.path)-1]
			continue
		}
		var fe *FieldError
		if p, fe = x.walk(p, f); fe != nil {
			return p, fe
		}
		x.path = x.path[:len(x.path)-1]
	}
	return p, nil
}

// knows asks the decoder whether the struct t has the field whose key is
// data[key:end]: structFields follows msgpack's naming rules, but msgpack
// decides.
func (x *explainer) knows(t reflect.Type, key, end int) bool {
	entry := append(append([]byte{0x81}, x.data[key:end]...), 0xc0) // {key: nil}
	return decode(entry, reflect.New(t).Interface(), true) == nil
}

// structFields returns the fields of the struct t by the names msgpack
// gives them: a "msgpack" tag's name or the field's own, an alias,
// embedded structs' fields inlined unless shadowed; fields marked "-" and
// unexported ones left out.
func structFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	addFields(t, m, map[reflect.Type]bool{})
	return m
}

func addFields(t reflect.Type, m map[string]reflect.Type, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	var inline []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("msgpack")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && !strings.Contains(opts, "noinline") && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !opaque(ft) {
				inline = append(inline, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
		for _, o := range strings.Split(opts, ",") {
			if alias, ok := strings.CutPrefix(o, "alias:"); ok {
				m[alias] = f.Type
			}
		}
	}
	for _, ft := range inline {
		inner := map[string]reflect.Type{}
		addFields(ft, inner, seen)
		for name, typ := range inner {
			if _, shadowed := m[name]; !shadowed {
				m[name] = typ
			}
		}
	}
}

func isMap(c byte) bool    { return c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf }
func isArray(c byte) bool  { return c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd }
func isString(c byte) bool { return c >= 0xa0 && c <= 0xbf || c >= 0xd9 && c <= 0xdb }

// head reads the header of the value at data[pos:], which validate has
// passed: its kind, the bytes of its payload, its items (a map's keys and
// values both) and where the header ends.
func (x *explainer) head(pos int) (kind string, payload, items uint64, next int) {
	switch c := x.data[pos]; {
	case c <= 0x7f, c >= 0xe0:
		return "int", 0, 0, pos + 1
	case c == 0xc0:
		return "nil", 0, 0, pos + 1
	case c == 0xc2, c == 0xc3:
		return "bool", 0, 0, pos + 1
	case c <= 0x8f:
		return "map", 0, 2 * uint64(c&0x0f), pos + 1
	case c <= 0x9f:
		return "array", 0, uint64(c & 0x0f), pos + 1
	case c <= 0xbf:
		return "str", uint64(c & 0x1f), 0, pos + 1
	}
	kind, payload, items, _, next, _ = header(x.data, pos)
	return kind, payload, items, next
}

// end returns where the value at data[pos:] ends, without recursion.
func (x *explainer) end(pos int) int {
	for pending := uint64(1); pending > 0; pending-- {
		_, payload, items, next := x.head(pos)
		pos = next + int(payload)
		pending += items
	}
	return pos
}

// count returns the entries of the map, or the items of the array, at
// data[pos:], and where its first item begins.
func (x *explainer) count(pos int) (int, int) {
	kind, _, items, next := x.head(pos)
	if kind == "map" {
		items /= 2
	}
	return int(items), next
}

// str returns the string at data[pos:].
func (x *explainer) str(pos int) string {
	_, n, _, next := x.head(pos)
	return string(x.data[next : next+int(n)])
}

// keyText is the map key at data[pos:end] as a path shows it: quoted if
// a string, as decoded otherwise.
func (x *explainer) keyText(pos, end int) string {
	if isString(x.data[pos]) {
		return strconv.Quote(x.str(pos))
	}
	var k any
	if decode(x.data[pos:end], &k, false) != nil {
		return "?"
	}
	return fmt.Sprint(k)
}

// got describes the value at data[pos:end] for an error: its kind, and its
// value when that is short.
func (x *explainer) got(pos, end int) string {
	kind, payload, items, next := x.head(pos)
	switch kind {
	case "str":
		s := string(x.data[next : next+int(payload)])
		if len(s) > 40 {
			return fmt.Sprintf("string %q... (%d bytes)", s[:40], len(s))
		}
		return "string " + strconv.Quote(s)
	case "map":
		return fmt.Sprintf("map of %d entries", items/2)
	case "array":
		return fmt.Sprintf("array of %d items", items)
	case "bin":
		return fmt.Sprintf("bin of %d bytes", payload)
	case "ext", "fixext":
		return fmt.Sprintf("ext of type %d", int8(x.data[next]))
	case "nil":
		return "nil"
	}
	var v any
	if decode(x.data[pos:end], &v, false) != nil {
		return kind
	}
	return fmt.Sprintf("%s %v", kind, v)
}

// decode decodes data, one whole value, into v, which is a non-nil
// pointer: validated first, then read through the guarded reader (see
// validate). A failure of the decoder's own is returned as it is; Unmarshal
// explains it. With strict, a map key that names no field of its struct is
// refused.
func decode(data []byte, v any, strict bool) error {
	d := getDecoder()
	var err error
	if d.r.guards, err = validate(data, d.r.guards[:0]); err != nil {
		putDecoder(d)
		return err
	}
	d.r.reset(data)
	d.dec.Reset(&d.r)
	d.dec.DisallowUnknownFields(strict)
	err = d.dec.Decode(v)
	if d.r.tripped >= 0 {
		// The decoder's own error is only that a read failed.
		err = guardError(d.r.tripped)
	}
	if len(data) <= maxPooledBuffer {
		// Past it, the decoder keeps an internal buffer as large as the
		// longest string it has read, which the pool should not keep
		// alive.
		putDecoder(d)
	}
	return err
}
