package clone

import (
	"maps"
	"reflect"
	"time"
)

// immutable lists standard struct types that hold pointers only to memory
// nobody mutates, so a plain assignment copies them deeply enough: they count
// as flat although their unexported fields are not. Only the listed types
// themselves are allowed, not the pointer types inside them.
var immutable = map[reflect.Type]bool{
	// time.Time's *time.Location is shared by design and never mutated
	// once built (time.LoadLocation and time.FixedZone return new ones).
	reflect.TypeFor[time.Time](): true,
}

// builder compiles the plans For needs for one type.
type builder struct {
	// plans holds the plans compiled by this builder, including those still
	// being compiled: a recursive type finds its own plan here. Such a type
	// is never flat (its recursion goes through a pointer, slice or map),
	// which is what an unfinished plan says.
	plans map[reflect.Type]*Plan
}

// build compiles the plan for t and caches it, with every plan compiled on
// the way; or caches why t cannot be copied.
func build(t reflect.Type) (*Plan, error) {
	b := &builder{plans: make(map[reflect.Type]*Plan)}
	if _, err := b.plan(t); err != nil {
		if ce, ok := err.(*cloneError); ok {
			ce.root = t.String()
		}
		// The plans compiled on the way may refer to the failed ones:
		// drop them all, keep only the error.
		e, _ := plans.LoadOrStore(t, &entry{err: err})
		return e.(*entry).plan, e.(*entry).err
	}
	for typ, p := range b.plans {
		plans.LoadOrStore(typ, &entry{plan: p})
	}
	e, _ := plans.Load(t)
	return e.(*entry).plan, e.(*entry).err
}

// plan returns the plan for t: cached, being compiled, or compiled now.
func (b *builder) plan(t reflect.Type) (*Plan, error) {
	if e, ok := plans.Load(t); ok && e.(*entry).plan != nil {
		return e.(*entry).plan, nil
	}
	if p, ok := b.plans[t]; ok {
		return p, nil
	}
	p := &Plan{typ: t}
	b.plans[t] = p
	if err := b.compile(p); err != nil {
		return nil, err
	}
	return p, nil
}

// copyFlat copies a flat value: a plain assignment.
func copyFlat(dst, src reflect.Value, _ int) error {
	dst.Set(src)
	return nil
}

// setFlat marks p flat.
func (p *Plan) setFlat() {
	p.flat = true
	p.copy = copyFlat
}

// compile fills in p, whose type is p.typ.
func (b *builder) compile(p *Plan) error {
	t := p.typ
	if immutable[t] {
		p.setFlat()
		return nil
	}
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128,
		reflect.String:
		p.setFlat()
		return nil
	case reflect.Array:
		return b.compileArray(p)
	case reflect.Struct:
		return b.compileStruct(p)
	case reflect.Pointer:
		return b.compilePointer(p)
	case reflect.Slice:
		return b.compileSlice(p)
	case reflect.Map:
		return b.compileMap(p)
	case reflect.Interface:
		p.copy = copyInterface
		return nil
	default: // Chan, Func, UnsafePointer
		return uncopyable("%s cannot be copied", t)
	}
}

// compileArray plans an array: flat if its element is (or it is empty),
// else copied element by element.
func (b *builder) compileArray(p *Plan) error {
	t := p.typ
	n := t.Len()
	if n == 0 { // holds nothing, whatever its element type (e.g. _ [0]func())
		p.setFlat()
		return nil
	}
	elem, err := b.plan(t.Elem())
	if err != nil {
		return at(err, "[]")
	}
	if elem.flat {
		p.setFlat()
		return nil
	}
	p.copy = func(dst, src reflect.Value, depth int) error {
		for i := range n {
			if err := elem.copy(dst.Index(i), src.Index(i), depth); err != nil {
				return at(err, "[]")
			}
		}
		return nil
	}
	return nil
}

// field is a struct field that needs a deep copy.
type field struct {
	index int
	plan  *Plan
	seg   string // ".Name"
}

// compileStruct plans a struct: flat if every field is, else assigned whole
// and then its exported non-flat fields deep-copied. An unexported non-flat
// field makes it uncopyable.
func (b *builder) compileStruct(p *Plan) error {
	t := p.typ
	var fields []field
	for i := range t.NumField() {
		f := t.Field(i)
		seg := "." + f.Name
		fp, err := b.plan(f.Type)
		if err != nil {
			return at(err, seg)
		}
		if fp.flat {
			continue // copied by the assignment of the whole struct
		}
		if !f.IsExported() {
			// Reflection cannot set it, and sharing it would break the
			// guarantee.
			return at(uncopyable("unexported field of non-flat type %s cannot be copied", f.Type), seg)
		}
		fields = append(fields, field{index: i, plan: fp, seg: seg})
	}
	if len(fields) == 0 {
		p.setFlat()
		return nil
	}
	p.copy = func(dst, src reflect.Value, depth int) error {
		dst.Set(src) // the flat fields, exported or not
		for i := range fields {
			f := &fields[i]
			if err := f.plan.copy(dst.Field(f.index), src.Field(f.index), depth); err != nil {
				return at(err, f.seg)
			}
		}
		return nil
	}
	return nil
}

// compilePointer plans a pointer: nil stays nil, else a new pointee holding
// a deep copy.
func (b *builder) compilePointer(p *Plan) error {
	t := p.typ
	elem, err := b.plan(t.Elem())
	if err != nil {
		return err // pointers add nothing to the path
	}
	zero := reflect.Zero(t)
	p.fresh = func(src reflect.Value, depth int) (reflect.Value, error) {
		if src.IsNil() {
			return zero, nil
		}
		if depth >= MaxDepth {
			return reflect.Value{}, tooDeep()
		}
		v := reflect.New(elem.typ)
		if err := elem.copy(v.Elem(), src.Elem(), depth+1); err != nil {
			return reflect.Value{}, err
		}
		return v, nil
	}
	p.copy = func(dst, src reflect.Value, depth int) error {
		v, err := p.fresh(src, depth)
		if err != nil {
			return err
		}
		dst.Set(v)
		return nil
	}
	return nil
}

// compileSlice plans a slice: nil stays nil, empty stays empty (not nil),
// else a new array of len elements (cap == len), filled with one copy for
// flat elements or element by element.
func (b *builder) compileSlice(p *Plan) error {
	t := p.typ
	elem, err := b.plan(t.Elem())
	if err != nil {
		return at(err, "[]")
	}
	// fill deep-copies the elements of src into dst, of the same length.
	fill := func(dst, src reflect.Value, depth int) error {
		if elem.flat {
			reflect.Copy(dst, src)
			return nil
		}
		for i := range src.Len() {
			if err := elem.copy(dst.Index(i), src.Index(i), depth); err != nil {
				return at(err, "[]")
			}
		}
		return nil
	}
	zero := reflect.Zero(t)
	p.fresh = func(src reflect.Value, depth int) (reflect.Value, error) {
		if src.IsNil() {
			return zero, nil
		}
		if depth >= MaxDepth {
			return reflect.Value{}, tooDeep()
		}
		n := src.Len()
		v := reflect.MakeSlice(t, n, n)
		if err := fill(v, src, depth+1); err != nil {
			return reflect.Value{}, err
		}
		return v, nil
	}
	p.copy = func(dst, src reflect.Value, depth int) error {
		if src.IsNil() {
			dst.SetZero()
			return nil
		}
		n := src.Len()
		if n == 0 {
			// Empty but not nil, and with no capacity: it points into
			// src's array (if anything) but can reach none of it.
			dst.Set(src)
			dst.SetCap(0)
			return nil
		}
		if depth >= MaxDepth {
			return tooDeep()
		}
		// Growing a nil slice allocates just the array, where MakeSlice
		// would allocate the slice header too. Zeroing dst first keeps
		// Grow from reusing whatever array dst held.
		dst.SetZero()
		dst.Grow(n)
		dst.SetLen(n)
		dst.SetCap(n)
		return fill(dst, src, depth+1)
	}
	return nil
}

// compileMap plans a map, whose keys must be flat: nil stays nil, else a new
// map with the same keys and deep copies of the values.
func (b *builder) compileMap(p *Plan) error {
	t := p.typ
	key, err := b.plan(t.Key())
	if err != nil || !key.flat {
		// A copied pointer key would not find the same entries.
		return uncopyable("%s cannot be copied: key type %s is not flat", t, t.Key())
	}
	val, err := b.plan(t.Elem())
	if err != nil {
		return at(err, "[]")
	}
	zero := reflect.Zero(t)
	if fast := fastMaps[t]; fast != nil {
		p.fresh = func(src reflect.Value, depth int) (reflect.Value, error) {
			if depth >= MaxDepth && !src.IsNil() {
				return reflect.Value{}, tooDeep()
			}
			return fast(src), nil
		}
	} else {
		p.fresh = func(src reflect.Value, depth int) (reflect.Value, error) {
			if src.IsNil() {
				return zero, nil
			}
			if depth >= MaxDepth {
				return reflect.Value{}, tooDeep()
			}
			return copyMap(t, key, val, src, depth)
		}
	}
	p.copy = func(dst, src reflect.Value, depth int) error {
		v, err := p.fresh(src, depth)
		if err != nil {
			return err
		}
		dst.Set(v)
		return nil
	}
	return nil
}

// fastMaps copies common map types whose keys and values are flat with
// maps.Clone, which copies the map's memory wholesale instead of entry by
// entry through reflection (about 3x faster for 8 entries). Only these exact
// types: a named map type is not found here and takes the general path.
var fastMaps = map[reflect.Type]func(src reflect.Value) reflect.Value{
	reflect.TypeFor[map[string]string]():  cloneMap[string, string],
	reflect.TypeFor[map[string]bool]():    cloneMap[string, bool],
	reflect.TypeFor[map[string]int]():     cloneMap[string, int],
	reflect.TypeFor[map[string]int64]():   cloneMap[string, int64],
	reflect.TypeFor[map[string]uint64]():  cloneMap[string, uint64],
	reflect.TypeFor[map[string]float64](): cloneMap[string, float64],
	reflect.TypeFor[map[int]string]():     cloneMap[int, string],
	reflect.TypeFor[map[int64]string]():   cloneMap[int64, string],
}

// cloneMap copies src, a map[K]V with flat K and V. maps.Clone keeps nil
// nil and empty empty.
func cloneMap[K comparable, V any](src reflect.Value) reflect.Value {
	return reflect.ValueOf(maps.Clone(src.Interface().(map[K]V)))
}

// copyMap deep-copies src, a non-nil map of type t whose keys and values
// have the plans key and val, into a new map, entry by entry.
func copyMap(t reflect.Type, key, val *Plan, src reflect.Value, depth int) (reflect.Value, error) {
	m := reflect.MakeMapWithSize(t, src.Len())
	if src.Len() == 0 {
		return m, nil
	}
	// One key and one value variable serve every entry:
	// SetMapIndex copies them into the map.
	k := reflect.New(key.typ).Elem()
	v := reflect.New(val.typ).Elem()
	var sv reflect.Value // the source value, when it needs a deep copy
	if !val.flat {
		sv = reflect.New(val.typ).Elem()
	}
	var it reflect.MapIter
	it.Reset(src)
	for it.Next() {
		k.SetIterKey(&it)
		if val.flat {
			v.SetIterValue(&it)
		} else {
			sv.SetIterValue(&it)
			if err := val.copy(v, sv, depth+1); err != nil {
				return reflect.Value{}, at(err, "[]")
			}
		}
		m.SetMapIndex(k, v)
	}
	return m, nil
}

// copyInterface copies an interface value, planning for its dynamic type.
func copyInterface(dst, src reflect.Value, depth int) error {
	if src.IsNil() {
		dst.SetZero()
		return nil
	}
	e := src.Elem()
	ep, err := For(e.Type())
	if err != nil {
		return dynamic(e.Type(), err)
	}
	if ep.flat {
		// What an interface holds cannot be changed in place, only
		// replaced: a flat value can be shared.
		dst.Set(src)
		return nil
	}
	if depth >= MaxDepth {
		return tooDeep()
	}
	v, err := ep.clone(e, depth+1)
	if err != nil {
		return at(err, ".("+e.Type().String()+")")
	}
	dst.Set(v)
	return nil
}
