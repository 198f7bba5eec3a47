package describe

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// builder builds a Description, keeping the names it gave named structs.
type builder struct {
	d     Description
	names map[reflect.Type]string // the named structs' names in d.Defs
}

var (
	typeOfTime          = reflect.TypeFor[time.Time]()
	typeOfJSONMarshaler = reflect.TypeFor[json.Marshaler]()
	typeOfTextMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// schemaOf returns the schema of t's JSON form, encoding/json's.
func (b *builder) schemaOf(t reflect.Type) Schema {
	switch {
	case t == typeOfTime:
		return Schema{"type": "string", "format": "date-time"}
	case t.Implements(typeOfJSONMarshaler) || reflect.PointerTo(t).Implements(typeOfJSONMarshaler):
		return Schema{"description": "JSON of " + t.String() + "'s own"}
	case t.Implements(typeOfTextMarshaler) || reflect.PointerTo(t).Implements(typeOfTextMarshaler):
		return Schema{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "number"}
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Pointer:
		return Schema{"anyOf": []Schema{b.schemaOf(t.Elem()), {"type": "null"}}}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return Schema{"type": "string", "contentEncoding": "base64"}
		}
		return Schema{"type": []string{"array", "null"}, "items": b.schemaOf(t.Elem())}
	case reflect.Array:
		return Schema{"type": "array", "items": b.schemaOf(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return Schema{"type": []string{"object", "null"}, "additionalProperties": b.schemaOf(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return b.structSchema(t)
		}
		name, ok := b.names[t]
		if !ok {
			// Named as Go prints it ("health.CheckRequest"); another
			// type of the same name gets a number.
			name = t.String()
			for n := 2; b.d.Defs[name] != nil; n++ {
				name = t.String() + "~" + strconv.Itoa(n)
			}
			b.names[t] = name // before its fields: a type that contains itself refers to it
			b.d.Defs[name] = Schema{}
			b.d.Defs[name] = b.structSchema(t)
		}
		return Schema{"$ref": "#/$defs/" + refEscaper.Replace(name)}
	case reflect.Interface:
		return Schema{} // anything
	}
	return Schema{"description": "not encodable as JSON: " + t.String()}
}

// structSchema returns the schema of a struct's JSON object: its exported
// fields under their JSON names, as encoding/json writes them (embedded
// structs' fields promoted, "-" left out).
func (b *builder) structSchema(t reflect.Type) Schema {
	props := map[string]any{}
	b.fields(t, props, map[reflect.Type]bool{})
	return Schema{"type": "object", "properties": props}
}

// fields adds t's fields to props: its own first, then its embedded
// structs' (a field of an outer struct hides a promoted one of the same
// name, as in encoding/json).
func (b *builder) fields(t reflect.Type, props map[string]any, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if ft := f.Type; f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = b.schemaOf(f.Type)
	}
	for _, ft := range embedded {
		promoted := map[string]any{}
		b.fields(ft, promoted, seen)
		for k, v := range promoted {
			if _, hidden := props[k]; !hidden {
				props[k] = v
			}
		}
	}
}

// refEscaper escapes a name for a JSON Pointer in "$ref" (RFC 6901).
var refEscaper = strings.NewReplacer("~", "~0", "/", "~1")
