// Package describe says what a dispatch Server's methods take and give,
// as JSON Schemas of their argument and reply types, so that a caller
// with no Go types — a person with cmd/zerodial or curl, a tool in
// another language — knows what to send and what comes back (as gRPC's
// reflection service lists a server's services).
//
// Of builds the description of a Server. Register makes the Server answer
// it as a method of its own, Method, on every path a Server serves (tcp,
// mux, memory, the shortcut, HTTP through httpzerodial), for a program
// that chooses to publish it; Fetch asks for it. httpzerodial.Describe
// serves the same description over HTTP GET.
package describe

import (
	"context"
	"reflect"

	"github.com/zerodial/transport/dispatch"
)

// Method is the method that Register makes a Server answer with its
// description.
const Method = "Describe.Methods"

// Request asks for a Server's description. It has no fields yet: it is a
// struct so that fields can be added without breaking callers.
type Request struct{}

// Description is what a Server's methods take and give:
//
//	{"methods": [{"name": "Calc.Add", "stream": false,
//	              "args": {...}, "reply": {...}}, ...],
//	 "$defs": {"main.Args": {...}}}
//
// Each type is described by the JSON Schema (draft 2020-12) of its
// encoding/json form: a named struct once, under Defs, and referred to by
// "$ref" wherever it appears, so that a type that contains itself is
// described too. Its msgpack names are its JSON names, so that it reads
// the same whichever way it travels. A method of raw bodies whose
// registration said what they hold (dispatch.WithEncoding: a gRPC method,
// through grpczerodial) carries it as its Encoding, its args and reply
// described as bytes of the messages named ("protobuf
// grpc.testing.SimpleRequest").
type Description struct {
	// Methods are the Server's methods, sorted by name; never nil, so
	// that a Server with none is described by an empty list.
	Methods []MethodDescription `json:"methods" msgpack:"methods"`
	// Defs holds the named structs' schemas, by the name Go prints
	// ("health.CheckRequest"; another type of the same name gets "~2").
	Defs map[string]Schema `json:"$defs,omitempty" msgpack:"$defs,omitempty"`
}

// MethodDescription is one method: its name, whether it streams, and the
// schemas of what it takes and gives (for a streaming method, of each
// message the caller sends and of each the handler sends).
type MethodDescription struct {
	// Name is the method's name, "Service.Method".
	Name string `json:"name" msgpack:"name"`
	// Stream is set for a streaming method (dispatch.HandleStream).
	Stream bool `json:"stream" msgpack:"stream"`
	// Args is the schema of the arguments (of each message the caller
	// sends, for a stream).
	Args Schema `json:"args" msgpack:"args"`
	// Reply is the schema of the reply (of each message the handler
	// sends, for a stream).
	Reply Schema `json:"reply" msgpack:"reply"`
	// Encoding, for a method of raw bodies whose registration said what
	// they hold (dispatch.WithEncoding: a gRPC method's, through
	// grpczerodial), says so: the encoding, the messages' names, the
	// method's origin. Its Args and Reply schemas are then strings of
	// bytes in that encoding, described as such. Nil for other methods.
	Encoding *dispatch.Encoding `json:"encoding,omitempty" msgpack:"encoding,omitempty"`
}

// Schema is a JSON Schema, as a JSON object.
type Schema map[string]any

// Of describes the methods registered on srv now; methods registered
// later appear in later descriptions.
func Of(srv *dispatch.Server) Description {
	b := builder{d: Description{Methods: []MethodDescription{}, Defs: map[string]Schema{}}, names: map[reflect.Type]string{}}
	for _, m := range srv.MethodInfos() {
		md := MethodDescription{Name: m.Name, Stream: m.Stream, Encoding: m.Encoding}
		if e := m.Encoding; e != nil {
			md.Args, md.Reply = encodedSchema(*e, e.Args), encodedSchema(*e, e.Reply)
		} else {
			md.Args, md.Reply = b.schemaOf(m.Args), b.schemaOf(m.Reply)
		}
		b.d.Methods = append(b.d.Methods, md)
	}
	return b.d
}

// encodedSchema is the schema of a raw body in e: bytes (base64 in JSON)
// holding message, "protobuf grpc.testing.SimpleRequest".
func encodedSchema(e dispatch.Encoding, message string) Schema {
	what := e.Name
	if message != "" {
		what += " " + message
	}
	return Schema{"type": "string", "contentEncoding": "base64", "description": what}
}

// Register makes srv answer Method with its description (Of), as it is at
// each call: a Server publishes what it serves only when its program
// asks, as a gRPC server registers its reflection service.
func Register(srv *dispatch.Server) error {
	return dispatch.Handle(srv, Method, func(ctx context.Context, _ *Request, d *Description) error {
		*d = Of(srv)
		return nil
	})
}

// Fetch asks the Server behind c for its description. A Server that has
// not called Register answers with a *dispatch.Error of
// dispatch.CodeNotFound.
//
// The schemas come back as a generic decoder makes them: nested schemas
// as map[string]any, lists as []any, numbers of any integer type.
func Fetch(ctx context.Context, c *dispatch.Client) (Description, error) {
	var d Description
	err := c.Call(ctx, Method, Request{}, &d)
	return d, err
}
