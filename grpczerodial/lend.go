package grpczerodial

import (
	"reflect"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// lend fills dst with src's fields without copying what they hold: dst's
// sub-messages, lists, maps, bytes and unknown fields are src's own. It is
// how a request and a reply pass on the direct shortcut to and from a
// method that borrows (Borrows): a generated handler decodes its request
// into a message of its own (the dec func), and the caller's reply is a
// message of its own, so each gets the other's fields, not its pointer. It
// reports false, having done nothing, when dst and src are not of one Go
// type.
func lend(dst, src proto.Message) bool {
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	if d.Type() != s.Type() {
		return false
	}
	proto.Reset(dst)
	if l := lenderOf(reflect.TypeOf(src)); l.fields != nil {
		l.lend(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem())
	} else {
		s.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			d.Set(fd, v)
			return true
		})
	}
	if u := s.GetUnknown(); len(u) > 0 {
		d.SetUnknown(u)
	}
	return true
}

// lender assigns the fields of a message struct generated with the open
// API (protoc-gen-go's default: one exported field for each field of the
// message or oneof), one by one, where protoreflect's Range and Set box
// each scalar: 2 allocations and several times the time for a
// SimpleRequest. It serves BenchmarkGRPCGenerated's grpczerodial-direct
// rows (TestLend).
type lender struct {
	// fields are the indices of the struct's exported fields; nil for a
	// type that is not such a struct (dynamicpb's, the opaque API's, one
	// with extensions), which lend sets through protoreflect.
	fields []int
}

// lenders caches a *lender for each message type (a pointer type).
var lenders sync.Map

// internalFields are the unexported fields of a message struct of the
// open API, which proto.Reset and the unknown fields take care of.
var internalFields = map[string]bool{"state": true, "sizeCache": true, "unknownFields": true}

func lenderOf(t reflect.Type) *lender {
	if l, ok := lenders.Load(t); ok {
		return l.(*lender)
	}
	l := &lender{}
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		st := t.Elem()
		fields := []int{}
		for i := range st.NumField() {
			f := st.Field(i)
			switch {
			case f.IsExported():
				fields = append(fields, i)
			case !internalFields[f.Name]:
				fields = nil // a field lend cannot see: through protoreflect
			}
			if fields == nil {
				break
			}
		}
		l.fields = fields
	}
	lenders.Store(t, l)
	return l
}

// lend assigns src's exported fields to dst's, both structs of the
// lender's type.
func (l *lender) lend(dst, src reflect.Value) {
	for _, i := range l.fields {
		dst.Field(i).Set(src.Field(i))
	}
}
