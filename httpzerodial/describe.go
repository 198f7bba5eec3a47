package httpzerodial

import (
	"encoding"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// Describe returns an http.Handler that answers GET with what srv's
// methods take and give, in JSON, so that a person with curl knows what to
// send (as gRPC's reflection service lists a server's services):
//
//	{"methods": [{"name": "Calc.Add", "path": "/Calc/Add", "stream": false,
//	              "args": {...}, "reply": {...}}, ...],
//	 "$defs": {"main.Args": {...}}}
//
// Each type is described by the JSON Schema (draft 2020-12) of its
// encoding/json form: a named struct once, under "$defs", and referred to
// by "$ref" wherever it appears (so that a type that contains itself is
// described too). Methods registered later appear in later answers. Mount
// it beside the Handler, at a path no method has ("/describe", say).
func Describe(srv *dispatch.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "httpzerodial: the description is read with GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(describe(srv.MethodInfos()))
	})
}

// description is what Describe answers.
type description struct {
	Methods []methodDescription     `json:"methods"`
	Defs    map[string]schema       `json:"$defs,omitempty"`
	names   map[reflect.Type]string // the named structs' names in Defs
}

type methodDescription struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Stream bool   `json:"stream"`
	Args   schema `json:"args"`
	Reply  schema `json:"reply"`
}

// schema is a JSON Schema, as a JSON object.
type schema map[string]any

func describe(infos []dispatch.MethodInfo) description {
	d := description{Methods: []methodDescription{}, Defs: map[string]schema{}, names: map[reflect.Type]string{}}
	for _, m := range infos {
		dot := strings.LastIndex(m.Name, ".")
		d.Methods = append(d.Methods, methodDescription{
			Name:   m.Name,
			Path:   "/" + m.Name[:dot] + "/" + m.Name[dot+1:],
			Stream: m.Stream,
			Args:   d.schemaOf(m.Args),
			Reply:  d.schemaOf(m.Reply),
		})
	}
	return d
}

var (
	typeOfTime          = reflect.TypeFor[time.Time]()
	typeOfJSONMarshaler = reflect.TypeFor[json.Marshaler]()
	typeOfTextMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// schemaOf returns the schema of t's JSON form, encoding/json's.
func (d *description) schemaOf(t reflect.Type) schema {
	switch {
	case t == typeOfTime:
		return schema{"type": "string", "format": "date-time"}
	case t.Implements(typeOfJSONMarshaler) || reflect.PointerTo(t).Implements(typeOfJSONMarshaler):
		return schema{"description": "JSON of " + t.String() + "'s own"}
	case t.Implements(typeOfTextMarshaler) || reflect.PointerTo(t).Implements(typeOfTextMarshaler):
		return schema{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Pointer:
		return schema{"anyOf": []schema{d.schemaOf(t.Elem()), {"type": "null"}}}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": "string", "contentEncoding": "base64"}
		}
		return schema{"type": []string{"array", "null"}, "items": d.schemaOf(t.Elem())}
	case reflect.Array:
		return schema{"type": "array", "items": d.schemaOf(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return schema{"type": []string{"object", "null"}, "additionalProperties": d.schemaOf(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return d.structSchema(t)
		}
		name, ok := d.names[t]
		if !ok {
			// Named as Go prints it ("health.CheckRequest"); another
			// type of the same name gets a number.
			name = t.String()
			for n := 2; d.Defs[name] != nil; n++ {
				name = t.String() + "~" + strconv.Itoa(n)
			}
			d.names[t] = name // before its fields: a type that contains itself refers to it
			d.Defs[name] = schema{}
			d.Defs[name] = d.structSchema(t)
		}
		return schema{"$ref": "#/$defs/" + refEscaper.Replace(name)}
	case reflect.Interface:
		return schema{} // anything
	}
	return schema{"description": "not encodable as JSON: " + t.String()}
}

// structSchema returns the schema of a struct's JSON object: its exported
// fields under their JSON names, as encoding/json writes them (embedded
// structs' fields promoted, "-" left out).
func (d *description) structSchema(t reflect.Type) schema {
	props := map[string]any{}
	d.fields(t, props, map[reflect.Type]bool{})
	return schema{"type": "object", "properties": props}
}

// fields adds t's fields to props: its own first, then its embedded
// structs' (a field of an outer struct hides a promoted one of the same
// name, as in encoding/json).
func (d *description) fields(t reflect.Type, props map[string]any, seen map[reflect.Type]bool) {
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
		props[name] = d.schemaOf(f.Type)
	}
	for _, ft := range embedded {
		promoted := map[string]any{}
		d.fields(ft, promoted, seen)
		for k, v := range promoted {
			if _, hidden := props[k]; !hidden {
				props[k] = v
			}
		}
	}
}

// refEscaper escapes a name for a JSON Pointer in "$ref" (RFC 6901).
var refEscaper = strings.NewReplacer("~", "~0", "/", "~1")
