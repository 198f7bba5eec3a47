package httpzerodial

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/zerodial/transport/describe"
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
//
// It is package describe's Description (describe.Of), each method with
// the path a call of it is posted to (and, for a gRPC method registered
// through grpczerodial, its "encoding": protobuf, its messages, its gRPC
// name); a Server that also calls describe.Register answers the same over
// every path.
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
		enc.Encode(describeHTTP(describe.Of(srv)))
	})
}

// description is what Describe answers: describe.Description with each
// method's path.
type description struct {
	Methods []methodDescription        `json:"methods"`
	Defs    map[string]describe.Schema `json:"$defs,omitempty"`
}

type methodDescription struct {
	Name     string             `json:"name"`
	Path     string             `json:"path"`
	Stream   bool               `json:"stream"`
	Args     describe.Schema    `json:"args"`
	Reply    describe.Schema    `json:"reply"`
	Encoding *dispatch.Encoding `json:"encoding,omitempty"`
}

// describeHTTP adds to d each method's path, "/Service/Method".
func describeHTTP(d describe.Description) description {
	out := description{Methods: make([]methodDescription, 0, len(d.Methods)), Defs: d.Defs}
	for _, m := range d.Methods {
		dot := strings.LastIndex(m.Name, ".")
		out.Methods = append(out.Methods, methodDescription{
			Name:     m.Name,
			Path:     "/" + m.Name[:dot] + "/" + m.Name[dot+1:],
			Stream:   m.Stream,
			Args:     m.Args,
			Reply:    m.Reply,
			Encoding: m.Encoding,
		})
	}
	return out
}
