package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// description is what httpzerodial.Describe answers.
type description struct {
	Methods []struct {
		Name   string         `json:"name"`
		Stream bool           `json:"stream"`
		Args   map[string]any `json:"args"`
		Reply  map[string]any `json:"reply"`
	} `json:"methods"`
	Defs map[string]map[string]any `json:"$defs"`
}

// list prints the methods that the Describe handler at path lists, one a
// line with its argument and reply types, then the structs they name.
func list(ctx context.Context, h *httpConn, path string, stdout io.Writer) error {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+path, nil)
	if err != nil {
		return usageErr("zerodial: %v", err)
	}
	for k, v := range h.header {
		req.Header[k] = v
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return transportErr(ctx, err)
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body)
	if err != nil {
		return transportErr(ctx, err)
	}
	var d description
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &d) != nil || d.Methods == nil {
		return &failure{exitServer, fmt.Sprintf("zerodial: %s%s answered %s, not a description of methods "+
			"(mount httpzerodial.Describe there, or give its path with -describe)", h.base, path, resp.Status)}
	}
	for _, m := range d.Methods {
		reply := typeName(m.Reply)
		if m.Stream {
			reply = "stream " + reply
		}
		fmt.Fprintf(stdout, "%s(%s) %s\n", m.Name, typeName(m.Args), reply)
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
		fmt.Fprintf(stdout, "%s %s\n", n, typeName(d.Defs[n]))
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
