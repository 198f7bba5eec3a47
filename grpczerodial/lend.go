package grpczerodial

import (
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// lend fills dst with src's fields without copying what they hold: dst's
// sub-messages, lists, maps, bytes and unknown fields are src's own. It is
// how a request and a reply pass on the direct shortcut to and from a
// method that borrows (Borrows): a generated handler decodes its request
// into a message of its own (the dec func), and the caller's reply is a
// message of its own, so each gets the other's fields, not its pointer. It
// reports false, having done nothing, when dst and src are not of one
// message type. The typed copy of the fields (lender) is for a dst of src's
// own Go type; one of another (a struct that embeds the message, which a
// caller may pass as its reply) is filled through protoreflect
// (TestLendOtherGoType).
func lend(dst, src proto.Message) bool {
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	if d.Type() != s.Type() {
		return false
	}
	if !s.IsValid() { // a nil pointer: an empty message
		proto.Reset(dst)
		return true
	}
	if l := lenderOf(reflect.TypeOf(src)); l.run != nil && reflect.TypeOf(dst) == reflect.TypeOf(src) {
		l.lend(reflect.ValueOf(dst).UnsafePointer(), reflect.ValueOf(src).UnsafePointer())
		if len(d.GetUnknown()) > 0 {
			d.SetUnknown(nil)
		}
	} else {
		proto.Reset(dst)
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
// API (protoc-gen-go's default: protoimpl's state, then one exported field
// for each field of the message or oneof, with the unknown fields and the
// size cache before or after them) in one typed copy of the run of
// exported fields, where protoreflect's Range and Set take a call and box
// each scalar (2 allocations and five times the time for a SimpleRequest).
// The run leaves out the state and the size cache, which Marshal stores
// atomically: a message is safe to marshal in one goroutine while another
// lends it. It serves BenchmarkGRPCGenerated's grpczerodial-direct rows
// (TestLend).
type lender struct {
	// run is a struct type of the exported fields, laid out as they are
	// in the message struct from offset on: nil for a type that is not
	// such a struct (dynamicpb's messages, the opaque API's, one with
	// extensions), which lend sets through protoreflect.
	run    reflect.Type
	offset uintptr
}

// lenders caches a *lender for each message type (a pointer type).
var lenders sync.Map

// internalFields are the unexported fields of a message struct of the
// open API.
var internalFields = map[string]bool{"state": true, "sizeCache": true, "unknownFields": true}

func lenderOf(t reflect.Type) *lender {
	if l, ok := lenders.Load(t); ok {
		return l.(*lender)
	}
	l := &lender{}
	l.run, l.offset = runOf(t)
	lenders.Store(t, l)
	return l
}

// runOf returns the struct type of the exported fields of *t, a message
// struct of the open API, and their offset, or nil.
func runOf(t reflect.Type) (reflect.Type, uintptr) {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, 0
	}
	st := t.Elem()
	if st.NumField() == 0 || st.Field(0).Name != "state" {
		return nil, 0 // not the open API (an older generator's, whose XXX_ fields Marshal writes)
	}
	var fields []reflect.StructField
	first, ended := -1, false
	for i := range st.NumField() {
		f := st.Field(i)
		switch {
		case !f.IsExported() && internalFields[f.Name]:
			ended = first >= 0
		case !f.IsExported() || ended || strings.HasPrefix(f.Name, "XXX_"):
			return nil, 0 // a field the run cannot hold: through protoreflect
		default:
			if first < 0 {
				first = i
			}
			fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type})
		}
	}
	if first < 0 {
		return nil, 0 // no fields to lend
	}
	run := reflect.StructOf(fields)
	offset := st.Field(first).Offset
	for i := range run.NumField() {
		if offset+run.Field(i).Offset != st.Field(first+i).Offset {
			return nil, 0 // laid out otherwise: through protoreflect
		}
	}
	if offset+run.Size() > st.Size() {
		return nil, 0
	}
	return run, offset
}

// lend copies the run of exported fields of *src, a message struct of the
// lender's type, to *dst's, as an assignment of the run's type does (with
// the garbage collector's write barriers for the pointers it holds).
func (l *lender) lend(dst, src unsafe.Pointer) {
	reflect.NewAt(l.run, unsafe.Add(dst, l.offset)).Elem().Set(reflect.NewAt(l.run, unsafe.Add(src, l.offset)).Elem())
}
