package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
)

// description is what httpzerodial.Describe answers over HTTP and
// describe.Register's method over every path (describe.Description): the
// same but for the paths, which list does not print.
type description struct {
	Methods []struct {
		Name   string         `json:"name"`
		Stream bool           `json:"stream"`
		Args   map[string]any `json:"args"`
		Reply  map[string]any `json:"reply"`
		// Encoding says what a method of raw bodies holds (a gRPC
		// method's protobuf messages), when the Server said.
		Encoding *dispatch.Encoding `json:"encoding"`
	} `json:"methods"`
	Defs map[string]map[string]any `json:"$defs"`
}

// listHTTP reads the description that the httpzerodial.Describe handler
// at path answers.
func listHTTP(ctx context.Context, h *httpConn, path string) (*description, error) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+path, nil)
	if err != nil {
		return nil, usageErr("zerodial: %v", err)
	}
	for k, v := range h.header {
		req.Header[k] = v
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, h.doErr(ctx, err)
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body)
	if err != nil {
		return nil, transportErr(ctx, err)
	}
	var d description
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &d) != nil || d.Methods == nil {
		return nil, &failure{exitServer, fmt.Sprintf("zerodial: %s%s answered %s, not a description of methods "+
			"(mount httpzerodial.Describe there, or give its path with -describe)", h.base, path, resp.Status)}
	}
	return &d, nil
}

// listWire calls the method describe.Register adds, which a Server that
// does not describe itself answers with not_found: that is said with the
// way to make it do so.
func listWire(ctx context.Context, w *wireConn) (*description, error) {
	reply, err := w.call(ctx, describe.Method, json.RawMessage("{}"))
	var e *dispatch.Error
	if errors.As(err, &e) && e.Code == dispatch.CodeNotFound {
		return nil, &failure{exitServer, fmt.Sprintf("not_found: %s (the server does not describe itself: "+
			"it must call describe.Register(srv), package github.com/zerodial/transport/describe)", e.Message)}
	}
	if err != nil {
		return nil, err
	}
	var d description
	if json.Unmarshal(reply, &d) != nil || d.Methods == nil {
		return nil, &failure{exitServer, fmt.Sprintf("zerodial: %s answered %.200s, not a description of methods", describe.Method, reply)}
	}
	return &d, nil
}

// printList prints d's methods, one a line with its argument and reply
// types, then the structs they name. A method of raw bodies whose Server
// said what they hold (a gRPC method's) shows its messages in their
// encoding, and where it comes from:
//
//	grpc.testing.TestService.UnaryCall(protobuf grpc.testing.SimpleRequest) protobuf grpc.testing.SimpleResponse  # gRPC method /grpc.testing.TestService/UnaryCall
func printList(d *description, stdout io.Writer) error {
	for _, m := range d.Methods {
		args, reply := typeName(m.Args), typeName(m.Reply)
		if e := m.Encoding; e != nil {
			args, reply = strings.TrimSpace(e.Name+" "+e.Args), strings.TrimSpace(e.Name+" "+e.Reply)
		}
		if m.Stream {
			reply = "stream " + reply
		}
		line := fmt.Sprintf("%s(%s) %s", m.Name, args, reply)
		if e := m.Encoding; e != nil && e.Origin != "" {
			line += "  # " + e.Origin
		}
		fmt.Fprintln(stdout, line)
	}
	names := make([]string, 0, len(d.Defs))
	for n := range d.Defs {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 0 {
		fmt.Fprintln(stdout)
	}
	for _, n := range names {
		if _, err := fmt.Fprintf(stdout, "%s %s\n", n, typeName(d.Defs[n])); err != nil {
			return err
		}
	}
	return nil
}

// typeName writes a JSON Schema of Describe's as a short type.
func typeName(s map[string]any) string {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		return strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	}
	if alts, ok := s["anyOf"].([]any); ok && len(alts) == 2 {
		if first, ok := alts[0].(map[string]any); ok {
			return "*" + typeName(first)
		}
	}
	sub := func(key string) string {
		m, _ := s[key].(map[string]any)
		return typeName(m)
	}
	var typ string
	switch t := s["type"].(type) {
	case string:
		typ = t
	case []any:
		if len(t) > 0 {
			typ, _ = t[0].(string)
		}
	}
	switch typ {
	case "array":
		return "[]" + sub("items")
	case "object":
		if props, ok := s["properties"].(map[string]any); ok {
			fields := make([]string, 0, len(props))
			for k, v := range props {
				m, _ := v.(map[string]any)
				fields = append(fields, k+" "+typeName(m))
			}
			slices.Sort(fields)
			return "{" + strings.Join(fields, ", ") + "}"
		}
		return "map[string]" + sub("additionalProperties")
	case "":
		if d, ok := s["description"].(string); ok {
			return "(" + d + ")"
		}
		return "any"
	}
	if s["contentEncoding"] == "base64" {
		return "bytes"
	}
	return typ
}
