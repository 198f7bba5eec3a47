package clone

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// MaxDepth bounds the nesting Copy follows: the number of pointers, slices,
// maps and interfaces entered on the way from the top-level value to any
// part of it. Copy fails once a value nests deeper, which is how it ends a
// cycle (p.Next = p), since it does not track the pointers it has seen.
//
// 10000 is encoding/json's limit on nesting and far beyond what an RPC
// argument needs, yet cheap to reach and safe to recurse through: each level
// takes a few hundred bytes of goroutine stack, a few MiB in all against
// Go's 1 GiB stack limit. A linked list longer than MaxDepth cannot be
// copied; a codec round trip would not be able to encode a cycle at all.
const MaxDepth = 10000

// Plan deep-copies values of one type. Safe for concurrent use.
type Plan struct {
	typ  reflect.Type
	flat bool

	// copy sets dst (settable, of typ) to a deep copy of src (of typ),
	// overwriting all of dst. depth counts the pointers, slices, maps and
	// interfaces entered to reach src. It is set once the plan is compiled;
	// plans that contain this one call it through the Plan pointer, so that
	// a recursive type can refer to its own plan while it is being built.
	copy func(dst, src reflect.Value, depth int) error

	// fresh, when not nil, returns a deep copy of src (of typ) as a new
	// value that is not addressable, so that storing it in an interface does
	// not copy it again. Pointer, slice and map plans have one.
	fresh func(src reflect.Value, depth int) (reflect.Value, error)
}

// entry is what the cache holds for a type: a plan or the reason there is none.
type entry struct {
	plan *Plan
	err  error
}

// plans caches an *entry per reflect.Type.
var plans sync.Map

// For returns the Plan for t, built once per type and cached, or an error
// saying why t cannot be deep-copied by reflection, which names the offending
// type and the path to it from t, e.g.
//
//	clone: dispatch_test.Req.Ch: chan int cannot be copied
func For(t reflect.Type) (*Plan, error) {
	if t == nil {
		return nil, errors.New("clone: nil type")
	}
	if e, ok := plans.Load(t); ok {
		e := e.(*entry)
		return e.plan, e.err
	}
	return build(t)
}

// Flat reports whether a plain assignment of a value of the type is already a
// deep copy: it holds no pointers, slices, maps or interfaces. Strings are
// immutable and count as flat; so do arrays and structs of flat types,
// including unexported fields of flat types, and the immutable standard types
// of the allow-list (time.Time). A caller can then copy with *dst = *src and
// skip Copy.
func (p *Plan) Flat() bool { return p.flat }

// Copy sets dst (settable, of the Plan's type) to a deep copy of src (of the
// Plan's type): afterwards dst shares no mutable memory with src. It fails
// (and leaves dst in an unspecified state) only for values it cannot copy
// that For could not rule out in advance: an interface holding a value of an
// uncopyable type, or nesting deeper than MaxDepth (a cycle of pointers, say).
//
// Like the reflect package, Copy panics when misused: when dst is not
// settable, or dst or src is not of the Plan's type.
func (p *Plan) Copy(dst, src reflect.Value) error {
	if !dst.CanSet() {
		panic("clone: Copy: dst is not settable")
	}
	if dst.Type() != p.typ || src.Type() != p.typ {
		panic(fmt.Sprintf("clone: Copy: plan for %s used with dst %s and src %s", p.typ, dst.Type(), src.Type()))
	}
	if p.flat {
		dst.Set(src)
		return nil
	}
	if err := p.copy(dst, src, 0); err != nil {
		var ce *cloneError
		if errors.As(err, &ce) {
			ce.root = p.typ.String()
		}
		return err
	}
	return nil
}

// clone returns a new value holding a deep copy of src, for storing in an
// interface.
func (p *Plan) clone(src reflect.Value, depth int) (reflect.Value, error) {
	if p.fresh != nil {
		return p.fresh(src, depth)
	}
	v := reflect.New(p.typ).Elem()
	if err := p.copy(v, src, depth); err != nil {
		return reflect.Value{}, err
	}
	return v, nil
}

// cloneError says why a type or a value cannot be copied, and where.
type cloneError struct {
	root string   // the type For or Copy was asked about
	segs []string // path from root, innermost segment first (appended while unwinding)
	msg  string
	deep bool // nesting beyond MaxDepth: no path, it could be MaxDepth long
}

// Error returns "clone: <root><path>: <msg>".
func (e *cloneError) Error() string {
	var b strings.Builder
	b.WriteString("clone: ")
	b.WriteString(e.root)
	for _, s := range slices.Backward(e.segs) {
		b.WriteString(s)
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

// tooDeep returns the error for nesting beyond MaxDepth.
func tooDeep() error {
	return &cloneError{deep: true, msg: fmt.Sprintf("nesting deeper than clone.MaxDepth (%d); a pointer cycle?", MaxDepth)}
}

// uncopyable returns an error for t, whose path the callers will fill in.
func uncopyable(format string, args ...any) error {
	return &cloneError{msg: fmt.Sprintf(format, args...)}
}

// at prepends seg to the path of err as it unwinds from the part that failed.
func at(err error, seg string) error {
	if ce, ok := err.(*cloneError); ok && !ce.deep {
		ce.segs = append(ce.segs, seg)
	}
	return err
}

// dynamic returns the error for an interface holding a value of type t, which
// For rejected with err.
func dynamic(t reflect.Type, err error) error {
	seg := ".(" + t.String() + ")"
	var ce *cloneError
	if !errors.As(err, &ce) {
		return &cloneError{segs: []string{seg}, msg: err.Error()}
	}
	// ce is cached and shared: build a new error rather than extend it.
	return &cloneError{segs: append(slices.Clone(ce.segs), seg), msg: ce.msg}
}
