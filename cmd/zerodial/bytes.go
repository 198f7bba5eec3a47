package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zerodial/transport/describe"
)

// One rule for bytes given in JSON, on every path: a []byte field given as
// a JSON string is base64, as encoding/json reads it. Over HTTP the server
// decodes the JSON with encoding/json, which applies it. Over tcp and mux
// the command sends msgpack, in which a string is a string, and a []byte
// field takes a string's own bytes; so the command first learns, from the
// Server's description (describe.Register), which strings of the arguments
// are []byte fields, and sends those decoded from base64, as msgpack bin.

// base64Args returns v, the arguments of method decoded from JSON
// (fromJSON), with each string that the method's argument type says is
// []byte decoded from base64. It asks the Server for its description only
// when v holds a string; a Server that does not describe itself is sent
// v as it is, since nothing then tells a []byte field from a string one.
func (w *wireConn) base64Args(ctx context.Context, method string, v any) (any, error) {
	if method == describe.Method || !hasString(v) {
		return v, nil
	}
	d, err := listWire(ctx, w)
	var f *failure
	if errors.As(err, &f) {
		return v, nil // not described: strings go as strings
	}
	if err != nil {
		return nil, err
	}
	for _, m := range d.Methods {
		if m.Name == method {
			return unbase64(v, m.Args, d.Defs, "")
		}
	}
	return v, nil // no such method: the call says so
}

// hasString reports whether v, decoded from JSON, holds a string.
func hasString(v any) bool {
	switch v := v.(type) {
	case string:
		return true
	case map[string]any:
		for _, e := range v {
			if hasString(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasString(e) {
				return true
			}
		}
	}
	return false
}

// unbase64 decodes from base64 each string of v whose schema s (JSON
// Schema, as describe writes it) is a string of contentEncoding base64,
// into []byte; at is where v is in the arguments, for an error.
func unbase64(v any, s map[string]any, defs map[string]map[string]any, at string) (any, error) {
	s = resolve(s, defs)
	if s == nil || v == nil {
		return v, nil
	}
	if alts, ok := s["anyOf"].([]any); ok { // a pointer: its target's schema, or null
		for _, a := range alts {
			if as, ok := a.(map[string]any); ok && as["type"] != "null" {
				return unbase64(v, as, defs, at)
			}
		}
		return v, nil
	}
	switch v := v.(type) {
	case string:
		if s["contentEncoding"] != "base64" {
			return v, nil
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			where := ""
			if at != "" {
				where = " of " + at
			}
			return nil, &notBase64{fmt.Errorf("the []byte field%s is not base64, as JSON gives bytes: %v", where, err)}
		}
		return b, nil
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		extra, _ := s["additionalProperties"].(map[string]any)
		for k, e := range v {
			es := extra
			if p, ok := props[k].(map[string]any); ok {
				es = p
			}
			n, err := unbase64(e, es, defs, join(at, k))
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
		return v, nil
	case []any:
		items, _ := s["items"].(map[string]any)
		for i, e := range v {
			n, err := unbase64(e, items, defs, at+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
		return v, nil
	}
	return v, nil
}

// resolve follows s's "$ref" into defs, once or more.
func resolve(s map[string]any, defs map[string]map[string]any) map[string]any {
	for range 100 { // a chain of references, not a loop
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name := strings.NewReplacer("~1", "/", "~0", "~").Replace(strings.TrimPrefix(ref, "#/$defs/"))
		s = defs[name]
	}
	return nil
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// bytesErr is base64Args's error as the command reports it: arguments
// that are not base64 where bytes are wanted are a usage error; the rest
// (the Server could not be asked) as they came.
func bytesErr(err error) error {
	var b *notBase64
	if errors.As(err, &b) {
		return usageErr("zerodial: %v", b.err)
	}
	return err
}

// notBase64 is a string given for a []byte field that is not base64.
type notBase64 struct{ err error }

func (e *notBase64) Error() string { return e.err.Error() }
