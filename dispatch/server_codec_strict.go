package dispatch

import (
	"bytes"
	"encoding/json"
	"net/rpc"
	"reflect"
)

// strictJSONArgs reports whether ServeCodec, under WithStrictDecoding, can
// have codec refuse unknown fields: net/rpc/jsonrpc's server codec can, as
// it decodes a call's params with encoding/json, which calls a target's
// UnmarshalJSON (strictJSON). gob has no such switch (it matches fields by
// name and drops the rest, by design), and another codec's decoding is its
// own (HashiCorp's msgpackrpc: its handle's ErrorIfNoField).
func strictJSONArgs(s *Server, codec rpc.ServerCodec) bool {
	if !s.opts.strict {
		return false
	}
	t := reflect.TypeOf(codec)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "net/rpc/jsonrpc"
}

// strictJSON is the arguments of a call as net/rpc/jsonrpc's codec is
// given them under WithStrictDecoding: the codec hands their JSON to
// UnmarshalJSON, which decodes it into v refusing fields v's type does not
// have, as encoding/json's DisallowUnknownFields does.
type strictJSON struct{ v any }

func (s *strictJSON) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(s.v)
}
